package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// TestUsageOfVerifiedCallers: with verified identity, a caller sees its
// own usage only (another user's is 403); the operator sees everyone's.
func TestUsageOfVerifiedCallers(t *testing.T) {
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newUsageEnv(t, "memory", nil, Options{Token: opToken, Identity: v, Keys: keys})
	key := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		k, rec, err := identity.NewKey(u, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.PutKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		key[u] = k
		if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hi from " + u}, "Authorization", "Bearer "+k); code != 200 {
			t.Fatalf("%s's run: %d %s", u, code, body)
		}
	}
	users := func(auth string) (int, []string) {
		code, body, _ := e.do("GET", "/api/v1/usage?by=user", nil, "Authorization", "Bearer "+auth)
		var rep ledger.Report
		if code != 200 {
			return code, nil
		}
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, g := range rep.Groups {
			out = append(out, g.Key["user"])
		}
		return code, out
	}
	if code, got := users(key["alice"]); code != 200 || len(got) != 1 || got[0] != "alice" {
		t.Errorf("alice sees %d %v, want only herself", code, got)
	}
	if code, _, _ := e.do("GET", "/api/v1/usage?user=bob", nil, "Authorization", "Bearer "+key["alice"]); code != 403 {
		t.Errorf("alice asking for bob's usage: %d, want 403", code)
	}
	if code, got := users(opToken); code != 200 || len(got) != 2 {
		t.Errorf("the operator sees %d %v, want both users", code, got)
	}
}
