package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// TestRecordsBelongToTheirCaller: with verified identity, a caller lists,
// reads, replays and forks only the runs it started (another's answer
// 404, as unknown runs); the operator reaches every run.
func TestRecordsBelongToTheirCaller(t *testing.T) {
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	e := newRecEnv(t, func(_ *StoreOptions, o *Options) {
		if o != nil {
			o.Token, o.Identity, o.Keys = opToken, v, keys
		}
	})
	key := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		k, rec, err := identity.NewKey(u, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.PutKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		key[u] = "Bearer " + k
	}
	code, body, hdr := e.do("POST", "/api/v1/chains/summariser/run", map[string]any{"input": "summarise A-1"}, "Authorization", key["alice"])
	if code != 200 {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	runID := hdr.Get("X-Run-Id")
	list := func(auth string) []string {
		_, body, _ := e.do("GET", "/api/v1/records", nil, "Authorization", auth)
		var metas []runrecord.Meta
		_ = json.Unmarshal(body, &metas)
		var ids []string
		for _, m := range metas {
			ids = append(ids, m.RunID)
		}
		return ids
	}
	if got := list(key["alice"]); len(got) != 1 || got[0] != runID {
		t.Errorf("alice lists %v, want her run", got)
	}
	if got := list(key["bob"]); len(got) != 0 {
		t.Errorf("bob lists %v, want none", got)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/api/v1/runs/" + runID + "/record"},
		{"POST", "/api/v1/runs/" + runID + "/replay"},
		{"POST", "/api/v1/runs/" + runID + "/fork"},
	} {
		var in any
		if r.method == "POST" {
			in = map[string]any{"step": 1}
		}
		if code, body, _ := e.do(r.method, r.path, in, "Authorization", key["bob"]); code != 404 {
			t.Errorf("bob: %s %s: %d %s, want 404 (as an unknown run)", r.method, r.path, code, body)
		}
	}
	for _, auth := range []string{key["alice"], "Bearer " + opToken} {
		if code, body, _ := e.do("GET", "/api/v1/runs/"+runID+"/record", nil, "Authorization", auth); code != 200 {
			t.Errorf("%s reading the record: %d %s", auth[:12], code, body)
		}
		if code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/replay", map[string]any{}, "Authorization", auth); code != 200 {
			t.Errorf("%s replaying: %d %s", auth[:12], code, body)
		}
	}
}
