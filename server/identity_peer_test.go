package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/peers"
)

// The real peers with verified identity: the `openai` npm client sends
// `user`, @ag-ui/client sends forwardedProps; a claim of another user is
// refused (the SDK raises PermissionDeniedError, HttpAgent fails the run),
// the caller's own user runs, and an interrupt is answered by its caller.
func TestVerifiedIdentityWithTheRealPeers(t *testing.T) {
	e := newIDEnv(t)
	user := []any{map[string]any{"role": "user", "content": "hello"}}
	in, _ := json.Marshal(map[string]any{"baseURL": e.base + "/v1", "apiKey": e.alice, "scenarios": []any{
		map[string]any{"name": "own", "kind": "create", "model": "chat", "messages": user, "extra": map[string]any{"user": "alice"}},
		map[string]any{"name": "other", "kind": "error", "model": "chat", "messages": user, "extra": map[string]any{"user": "bob"}},
	}})
	var oai []oaiResult
	if err := json.Unmarshal(peers.RunScript(t, "openai-client.mjs", in, 2*time.Minute), &oai); err != nil || len(oai) != 2 {
		t.Fatalf("openai-client: %v %+v", err, oai)
	}
	if oai[0].Error != nil || !strings.Contains(oai[0].Completion.content(), "Hello! You said: hello") {
		t.Fatalf("own user: %+v", oai[0])
	}
	if er := oai[1].Error; er == nil || er.Class != "PermissionDeniedError" || er.Status != 403 || er.Code != "user_mismatch" {
		t.Fatalf("another user: %+v", oai[1].Error)
	}

	claim := func(u string) map[string]any { return map[string]any{"ruleagent": map[string]any{"userId": u}} }
	in, _ = json.Marshal(map[string]any{"url": e.base, "token": e.alice, "scenarios": []any{
		map[string]any{"name": "other", "chain": "chat", "messages": userMsg("hi"), "forwardedProps": claim("bob")},
		map[string]any{"name": "own", "chain": "chat", "messages": userMsg("hi"), "forwardedProps": claim("alice")},
		map[string]any{"name": "approve", "chain": "guarded", "messages": userMsg("lookup it"), "forwardedProps": claim("alice"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
	}})
	var res []aguiResult
	if err := json.Unmarshal(peers.RunScript(t, "agui-http.mjs", in, 3*time.Minute), &res); err != nil || len(res) != 3 {
		t.Fatalf("agui-http: %v %+v", err, res)
	}
	if r := res[0].Runs[0]; !strings.Contains(r.Error, "403") || len(r.Events) != 0 {
		t.Fatalf("claiming bob over AG-UI: %+v", r)
	}
	checkRun(t, "own", res[1].Runs[0])
	if r := res[2].Runs; len(r) != 2 || r[0].Finished == nil || r[0].Finished.Outcome != "interrupt" {
		t.Fatalf("approve: %+v", r)
	}
	last := checkRun(t, "approve#2", res[2].Runs[1])
	if got := last[len(last)-1]["result"]; !strings.Contains(got.(string), `Result: {"found":"A-1"}`) {
		t.Fatalf("the answered run ended with %v", got)
	}
}
