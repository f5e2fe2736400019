package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// With verified identity, a thread belongs to the user who started it:
// another verified user can neither continue it (on /run, AG-UI or the
// OpenAI route), nor read, export, switch or delete its session; its
// creator can, and lists it among its sessions; the operator's token
// continues and reads every thread.
func TestThreadsBelongToTheirCreator(t *testing.T) {
	st := sessions.NewMemory()
	e := newSessionEnv(t, st, map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread"})})
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: st})
	if err != nil {
		t.Fatal(err)
	}
	e.opts = Options{Store: e.store, Token: opToken, Identity: v, Keys: st}
	e.base = serveLoopback(t, Handler(e.opts))
	alice, bob := addKey(t, st, "alice", ""), addKey(t, st, "bob", "")
	say := func(key, thread, text string) runAnswer {
		t.Helper()
		code, b, _ := e.do("POST", "/api/v1/chains/memo/run", map[string]any{"input": text, "threadId": thread}, "Authorization", "Bearer "+key)
		var ans runAnswer
		if code != 200 || json.Unmarshal(b, &ans) != nil {
			t.Fatalf("run: %d %s", code, b)
		}
		return ans
	}
	if ans := say(alice, "t1", "my name is Ada"); ans.Outcome != "success" {
		t.Fatalf("alice's first turn: %+v", ans)
	}
	// Bob continues alice's thread: refused, and nothing of his is kept.
	ans := say(bob, "t1", "what is her name?")
	if ans.Outcome != "error" || ans.ErrorCode != "session_not_yours" || !strings.Contains(ans.Error, "another user") {
		t.Fatalf("bob continuing alice's thread: %+v", ans)
	}
	code, b, _ := e.do("POST", "/v1/chat/completions", map[string]any{"model": "memo", "metadata": map[string]any{"threadId": "t1"},
		"messages": []any{map[string]any{"role": "user", "content": "and now?"}}}, "Authorization", "Bearer "+bob)
	if code != http.StatusForbidden || !strings.Contains(string(b), `"code":"session_not_yours"`) {
		t.Fatalf("bob over OpenAI: %d %s", code, b)
	}
	code, b, _ = e.do("POST", "/api/v1/chains/memo/agui", map[string]any{"threadId": "t1", "runId": "r-bob",
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": "and over AG-UI?"}}}, "Authorization", "Bearer "+bob)
	if code != 200 || !strings.Contains(string(b), "RUN_ERROR") || !strings.Contains(string(b), "session_not_yours") {
		t.Fatalf("bob over AG-UI: %d %s", code, b)
	}
	rec, err := st.Get(t.Context(), "memo:thread:t1")
	if err != nil || rec.Owner != "alice" || strings.Contains(mustJSON(t, rec.Messages), "her name") || strings.Contains(mustJSON(t, rec.Messages), "and now") {
		t.Fatalf("the thread after bob's tries: %+v %v", rec, err)
	}
	as := func(key, method, path string, body any) (int, string) {
		code, b, _ := e.do(method, path, body, "Authorization", "Bearer "+key)
		return code, string(b)
	}
	for _, r := range [][2]string{{"GET", "/api/v1/sessions/memo:thread:t1"}, {"GET", "/api/v1/sessions/memo:thread:t1/export"}, {"DELETE", "/api/v1/sessions/memo:thread:t1"}} {
		// As unknown as a thread that never was (TestAnotherUsersSessionsAreUnknown).
		if code, body := as(bob, r[0], r[1], nil); code != 404 {
			t.Fatalf("bob: %s %s: %d %s", r[0], r[1], code, body)
		}
	}
	if code, body := as(bob, "PUT", "/api/v1/sessions/memo:thread:t1/model", map[string]any{"model": "default"}); code != 404 {
		t.Fatalf("bob switches alice's thread's model: %d %s", code, body)
	}
	if code, list := as(bob, "GET", "/api/v1/sessions", nil); code != 200 || strings.Contains(list, "t1") {
		t.Fatalf("bob's list: %d %s", code, list)
	}
	// Alice goes on, reads and lists her thread.
	if ans := say(alice, "t1", "what is my name?"); ans.Outcome != "success" {
		t.Fatalf("alice's second turn: %+v", ans)
	}
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: my name is Ada", "assistant: Noted: my name is Ada", "user: what is my name?")
	if code, body := as(alice, "GET", "/api/v1/sessions/memo:thread:t1", nil); code != 200 || !strings.Contains(body, "my name is Ada") {
		t.Fatalf("alice reads her thread: %d %s", code, body)
	}
	if code, list := as(alice, "GET", "/api/v1/sessions", nil); code != 200 || !strings.Contains(list, "memo:thread:t1") {
		t.Fatalf("alice's list: %d %s", code, list)
	}
	// The operator's token continues and reads it; the thread stays alice's.
	if ans := say(opToken, "t1", "operator here"); ans.Outcome != "success" {
		t.Fatalf("the operator continues: %+v", ans)
	}
	if rec, _ := st.Get(t.Context(), "memo:thread:t1"); rec.Owner != "alice" {
		t.Fatalf("owner after the operator's turn: %q", rec.Owner)
	}
	// A thread the operator's token started has no owner: no verified
	// user continues it.
	if ans := say(opToken, "t2", "the operator's thread"); ans.Outcome != "success" {
		t.Fatalf("the operator starts a thread: %+v", ans)
	}
	if ans := say(alice, "t2", "mine now?"); ans.ErrorCode != "session_not_yours" {
		t.Fatalf("alice continuing the operator's thread: %+v", ans)
	}
	// A caller cannot make itself the owner through metadata.
	code, b, _ = e.do("POST", "/api/v1/chains/memo/run", map[string]any{"input": "hi", "threadId": "t1",
		"metadata": map[string]any{"verifiedUser": "alice"}}, "Authorization", "Bearer "+bob)
	if err := json.Unmarshal(b, &ans); err != nil || ans.ErrorCode != "session_not_yours" {
		t.Fatalf("bob claiming to be alice in metadata: %d %s", code, b)
	}
	if code, body := as(alice, "DELETE", "/api/v1/sessions/memo:thread:t1", nil); code != 204 {
		t.Fatalf("alice deletes her thread: %d %s", code, body)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A sub-agent's thread session is bound the same way: a verified user's
// run hands its identity on to the agents it calls, so that another user
// sending the same threadId reaches no sub-agent's thread either.
func TestSubAgentThreadsBelongToTheirCreator(t *testing.T) {
	const promptOuter = "You are the outer agent."
	script := llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptOuter), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("outer: " + res[0].Content)
			}
			args, _ := json.Marshal(map[string]string{"message": r.LastUserText()})
			return llmtest.Calls(llmtest.Call("memo", string(args)))
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptMemo), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Reply("Noted: " + r.LastUserText())
		})},
	)
	st := sessions.NewMemory()
	e := newSessionEnvLLM(t, st, map[string]string{
		"memo":  memoChain("memo", map[string]any{"scope": "thread"}),
		"outer": chainDSL("outer", "Outer", nil, agentNode(promptOuter, map[string]any{"tools": []any{map[string]any{"type": "agent", "name": "memo", "targetId": "memo"}}})),
	}, llmtest.NewServer(t, script))
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: st})
	if err != nil {
		t.Fatal(err)
	}
	e.opts = Options{Store: e.store, Token: opToken, Identity: v, Keys: st}
	e.base = serveLoopback(t, Handler(e.opts))
	alice, bob := addKey(t, st, "alice", ""), addKey(t, st, "bob", "")
	say := func(key, text string) string {
		t.Helper()
		code, b, _ := e.do("POST", "/api/v1/chains/outer/run", map[string]any{"input": text, "threadId": "t9"}, "Authorization", "Bearer "+key)
		var ans runAnswer
		if code != 200 || json.Unmarshal(b, &ans) != nil {
			t.Fatalf("run: %d %s", code, b)
		}
		return ans.Data
	}
	if got := say(alice, "alice's secret"); !strings.Contains(got, "Noted: alice's secret") {
		t.Fatalf("alice: %s", got)
	}
	if got := say(bob, "bob was here"); !strings.Contains(got, "session_not_yours") && !strings.Contains(got, "another user") {
		t.Fatalf("bob reached alice's sub-agent thread: %s", got)
	}
	rec, err := st.Get(t.Context(), "memo:thread:t9")
	if err != nil || rec.Owner != "alice" || strings.Contains(mustJSON(t, rec.Messages), "bob was here") {
		t.Fatalf("the sub-agent's thread: %+v %v", rec, err)
	}
}
