package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// hidingCase is one request a verified user sends about another user's id
// (other) and the same request about an id that never existed (unknown).
type hidingCase struct {
	name           string
	method         string
	other, unknown string // the paths
	otherBody      any
	unknownBody    any
	// otherID and unknownID are the ids the answers may echo.
	otherID, unknownID string
}

// sameAsUnknown checks that a request about another user's id answers
// byte for byte what the same request about a never-existing id answers
// (the id it echoes aside), and that the answer is no 403.
func sameAsUnknown(t *testing.T, do func(method, path string, body any) (int, []byte), c hidingCase) {
	t.Helper()
	oc, ob := do(c.method, c.other, c.otherBody)
	uc, ub := do(c.method, c.unknown, c.unknownBody)
	ob = bytes.ReplaceAll(ob, []byte(c.otherID), []byte(c.unknownID))
	if oc != uc || !bytes.Equal(ob, ub) || oc == http.StatusForbidden {
		t.Errorf("%s: another user's id answers %d %s; an unknown id %d %s", c.name, oc, ob, uc, ub)
	}
}

// TestAnotherUsersIDsAreUnknown: with verified identity, every route that
// takes a run id, record id or interrupt id answers another user's id as
// it answers an id that never existed (so the answer does not tell that
// the id exists), and the operator keeps reaching them.
func TestAnotherUsersIDsAreUnknown(t *testing.T) {
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	e := newRecEnv(t, func(so *StoreOptions, o *Options) {
		if so != nil {
			// The runs' events are logged, for rejoining.
			so.RunLog = RunLog{Events: so.Recording.Events, Replica: so.Replica}
		}
		if o != nil {
			o.Token, o.Identity, o.Keys = opToken, v, keys
		}
	})
	alice, bob := "Bearer "+addKey(t, keys, "alice", ""), "Bearer "+addKey(t, keys, "bob", "")
	as := func(auth string) func(method, path string, body any) (int, []byte) {
		return func(method, path string, body any) (int, []byte) {
			code, b, _ := e.do(method, path, body, "Authorization", auth)
			return code, b
		}
	}
	// Alice's ended run, recorded, with its events logged.
	if code, body, _ := e.do("POST", "/api/v1/chains/summariser/run", map[string]any{"input": "summarise A-1", "runId": "run-alice-done"},
		"Authorization", alice); code != 200 {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	// Alice's paused run, waiting for her approval.
	code, body, _ := e.do("POST", "/api/v1/chains/mixed/run", map[string]any{"input": "Look up A-1 and confirm it.", "runId": "run-alice-paused",
		"threadId": "t-alice"}, "Authorization", alice)
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("alice's paused run: %d %s", code, body)
	}
	aliceInt, nobodyInt := ans.Interrupts[0].ID, interruptID("run-nobody-at-all")
	answer := func(id string) []any {
		return []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
	}
	run := func(other, method, suffix string, body any) hidingCase {
		return hidingCase{name: method + " " + suffix + " of " + other, method: method,
			other: "/api/v1/runs/" + other + suffix, unknown: "/api/v1/runs/run-nobody-at-all" + suffix,
			otherBody: body, unknownBody: body, otherID: other, unknownID: "run-nobody-at-all"}
	}
	for _, c := range []hidingCase{
		run("run-alice-done", "GET", "/events", nil),
		run("run-alice-paused", "GET", "/events", nil),
		run("run-alice-done", "POST", "/cancel", nil),
		run("run-alice-paused", "POST", "/cancel", nil),
		run("run-alice-done", "GET", "/record", nil),
		run("run-alice-done", "POST", "/replay", map[string]any{}),
		run("run-alice-done", "POST", "/fork", map[string]any{"step": 1}),
		{name: "resume alice's interrupt", method: "POST", other: "/api/v1/runs/run-alice-paused/resume", unknown: "/api/v1/runs/run-nobody-at-all/resume",
			otherBody: map[string]any{"resume": answer(aliceInt)}, unknownBody: map[string]any{"resume": answer(nobodyInt)},
			otherID: aliceInt, unknownID: nobodyInt},
		{name: "AG-UI answers to alice's interrupt", method: "POST", other: "/api/v1/chains/mixed/agui", unknown: "/api/v1/chains/mixed/agui",
			otherBody:   map[string]any{"threadId": "t-alice", "runId": "r-bob", "resume": answer(aliceInt)},
			unknownBody: map[string]any{"threadId": "t-alice", "runId": "r-bob", "resume": answer(nobodyInt)},
			otherID:     aliceInt, unknownID: nobodyInt},
		{name: "usage of alice", method: "GET", other: "/api/v1/usage?user=alice", unknown: "/api/v1/usage?user=nobody-at-all",
			otherID: "alice", unknownID: "nobody-at-all"},
	} {
		if c.name == "usage of alice" {
			// A user id is no id of a thing: another user's usage is
			// refused (403) whether the user exists or not.
			oc, ob := as(bob)(c.method, c.other, nil)
			uc, ub := as(bob)(c.method, c.unknown, nil)
			if oc != uc || !bytes.Equal(ob, ub) {
				t.Errorf("usage: %d %s vs %d %s", oc, ob, uc, ub)
			}
			continue
		}
		sameAsUnknown(t, as(bob), c)
	}
	// The operator reaches alice's runs; alice her own.
	for _, auth := range []string{"Bearer " + opToken, alice} {
		if code, body, _ := e.do("GET", "/api/v1/runs/run-alice-done/record", nil, "Authorization", auth); code != 200 {
			t.Errorf("reading alice's record: %d %s", code, body)
		}
		if code, body, _ := e.do("GET", "/api/v1/runs/run-alice-done/events", nil, "Authorization", auth); code != 200 {
			t.Errorf("alice's run's events: %d %s", code, body)
		}
	}
	if code, body, _ := e.do("POST", "/api/v1/runs/run-alice-paused/cancel", nil, "Authorization", "Bearer "+opToken); code != http.StatusAccepted {
		t.Errorf("the operator cancels alice's paused run: %d %s", code, body)
	}
}

// TestAnotherUsersSessionsAreUnknown: a verified user asking for another
// user's session (a thread it started, or its user scope) gets what a
// session that never existed answers.
func TestAnotherUsersSessionsAreUnknown(t *testing.T) {
	st := sessions.NewMemory()
	e := newSessionEnv(t, st, map[string]string{
		"memo": memoChain("memo", map[string]any{"scope": "thread"}),
		"mine": memoChain("mine", map[string]any{"scope": "user"}),
	})
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: st})
	if err != nil {
		t.Fatal(err)
	}
	e.opts = Options{Store: e.store, Token: opToken, Identity: v, Keys: st}
	e.base = serveLoopback(t, Handler(e.opts))
	alice, bob := "Bearer "+addKey(t, st, "alice", ""), "Bearer "+addKey(t, st, "bob", "")
	for _, chain := range []string{"memo", "mine"} {
		if code, body, _ := e.do("POST", "/api/v1/chains/"+chain+"/run", map[string]any{"input": "my name is Ada", "threadId": "t1"},
			"Authorization", alice); code != 200 {
			t.Fatalf("alice's run: %d %s", code, body)
		}
	}
	do := func(method, path string, body any) (int, []byte) {
		code, b, _ := e.do(method, path, body, "Authorization", bob)
		return code, b
	}
	for _, ids := range [][2]string{{"memo:thread:t1", "memo:thread:never"}, {"mine:user:alice", "mine:user:nobody"}} {
		for _, r := range [][2]string{{"GET", ""}, {"GET", "/export"}, {"DELETE", ""}} {
			sameAsUnknown(t, do, hidingCase{name: r[0] + " " + ids[0] + r[1], method: r[0],
				other: "/api/v1/sessions/" + ids[0] + r[1], unknown: "/api/v1/sessions/" + ids[1] + r[1], otherID: ids[0], unknownID: ids[1]})
		}
	}
	for _, auth := range []string{alice, "Bearer " + opToken} {
		for _, id := range []string{"memo:thread:t1", "mine:user:alice"} {
			if code, body, _ := e.do("GET", "/api/v1/sessions/"+id, nil, "Authorization", auth); code != 200 {
				t.Errorf("reading %s: %d %s", id, code, body)
			}
		}
	}
}
