package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/sessions"
)

// A model switch takes effect for one session only, from the allowed list;
// anything else is refused, by the API and at run time.
func TestSessionModelSwitch(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "user",
		"allowedModels": []any{"small-model", map[string]any{"name": "big", "model": "big-model", "params": map[string]any{"temperature": 0.1}}}})})
	run := func(user, text string, md map[string]any) runAnswer {
		t.Helper()
		meta := map[string]any{"userId": user}
		for k, v := range md {
			meta[k] = v
		}
		return e.runOnce("memo", map[string]any{"input": text, "metadata": meta}, "success")
	}
	run("alice", "hi", nil)
	run("bob", "hi", nil)
	status, b, _ := e.do("PUT", "/api/v1/sessions/memo:user:alice/model", map[string]any{"model": "big"})
	if status != 200 || !strings.Contains(string(b), `"model":"big"`) {
		t.Fatalf("PUT model: %d %s", status, b)
	}
	ans := run("alice", "which model?", nil)
	r := agentRequest(e, promptMemo)
	if r.Model != "big-model" || r.JSON["temperature"] != 0.1 || ans.Metadata["model"] != "big-model" {
		t.Errorf("alice's run: model %q, temperature %v, answer metadata model %q", r.Model, r.JSON["temperature"], ans.Metadata["model"])
	}
	wantConv(t, r, sysMemo, "user: hi", "assistant: Noted: hi", "user: which model?")
	run("bob", "and mine?", nil)
	if r := agentRequest(e, promptMemo); r.Model != "test-model" {
		t.Errorf("bob's run went to %q", r.Model)
	}
	// A new session can be given a model before its first run; metadata
	// switches too, and the switch is kept with the turn.
	if status, b, _ := e.do("PUT", "/api/v1/sessions/memo:user:carol/model", map[string]any{"model": "small-model"}); status != 200 {
		t.Fatalf("PUT model for a new session: %d %s", status, b)
	}
	run("carol", "hello", nil)
	if r := agentRequest(e, promptMemo); r.Model != "small-model" {
		t.Errorf("carol's first run went to %q", r.Model)
	}
	run("bob", "switch me", map[string]any{"sessionModel": "big"})
	run("bob", "still big?", nil)
	if r := agentRequest(e, promptMemo); r.Model != "big-model" {
		t.Errorf("bob after sessionModel went to %q", r.Model)
	}
	run("bob", "back", map[string]any{"sessionModel": "default"})
	if r := agentRequest(e, promptMemo); r.Model != "test-model" {
		t.Errorf("bob after sessionModel default went to %q", r.Model)
	}

	// Not allowed: refused, and nothing reaches the LLM.
	if status, b, _ := e.do("PUT", "/api/v1/sessions/memo:user:alice/model", map[string]any{"model": "gpt-huge"}); status != 400 ||
		!strings.Contains(string(b), "small-model, big") {
		t.Errorf("PUT of a model not allowed: %d %s", status, b)
	}
	if status, _, _ := e.do("PUT", "/api/v1/sessions/nobody:user:alice/model", map[string]any{"model": "big"}); status != 404 {
		t.Errorf("PUT for an unknown agent: %d", status)
	}
	if status, _, _ := e.do("PUT", "/api/v1/sessions/memo:thread:t1/model", map[string]any{"model": "big"}); status != 400 {
		t.Errorf("PUT for the wrong scope: %d", status)
	}
	before := len(e.llm.Requests())
	bad := e.runOnce("memo", map[string]any{"input": "x", "metadata": map[string]any{"userId": "alice", "sessionModel": "gpt-huge"}}, "error")
	if bad.ErrorCode != "session_model" || !strings.Contains(bad.Error, "gpt-huge") || len(e.llm.Requests()) != before {
		t.Errorf("run with a model not allowed: %s %s", bad.ErrorCode, bad.Error)
	}
}

// The session routes: list with filters, read, export, delete.
func TestSessionRoutes(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "user_thread", "ttl": "1h"})})
	for _, u := range []string{"alice", "bob"} {
		e.runOnce("memo", map[string]any{"input": "hi from " + u, "threadId": "t:1/x", "metadata": map[string]any{"userId": u}}, "success")
	}
	var list struct{ Sessions []sessions.Info }
	status, b, _ := e.do("GET", "/api/v1/sessions?agent=memo&user=bob", nil)
	_ = json.Unmarshal(b, &list)
	if status != 200 || len(list.Sessions) != 1 || list.Sessions[0].UserID != "bob" || list.Sessions[0].ThreadID != "t:1/x" ||
		list.Sessions[0].Messages != 2 || list.Sessions[0].Expires.IsZero() {
		t.Fatalf("list: %d %s", status, b)
	}
	id := list.Sessions[0].ID
	if id != "memo:user_thread:bob:t%3A1%2Fx" {
		t.Errorf("id %q", id)
	}
	path := "/api/v1/sessions/" + strings.ReplaceAll(id, "%", "%25")
	status, b, _ = e.do("GET", path, nil)
	var rec sessions.Record
	_ = json.Unmarshal(b, &rec)
	if status != 200 || len(rec.Messages) != 2 || rec.Messages[1].Content != "Noted: hi from bob" || rec.ChainID != "memo" {
		t.Errorf("get: %d %s", status, b)
	}
	status, b, hdr := e.do("GET", path+"/export", nil)
	var exp struct {
		Format  string
		Session sessions.Record
	}
	_ = json.Unmarshal(b, &exp)
	if status != 200 || exp.Format != SessionExportFormat || len(exp.Session.Messages) != 2 ||
		!strings.Contains(hdr.Get("Content-Disposition"), "attachment") {
		t.Errorf("export: %d %v %s", status, hdr, b)
	}
	if status, _, _ := e.do("DELETE", path, nil); status != 204 {
		t.Errorf("delete: %d", status)
	}
	for _, p := range []string{path, path + "/export"} {
		if status, _, _ := e.do("GET", p, nil); status != 404 {
			t.Errorf("GET %s after delete: %d", p, status)
		}
	}
	if status, _, _ := e.do("DELETE", path, nil); status != 404 {
		t.Errorf("second delete: %d", status)
	}
	status, b, _ = e.do("GET", "/api/v1/sessions", nil)
	_ = json.Unmarshal(b, &list)
	if status != 200 || len(list.Sessions) != 1 || list.Sessions[0].UserID != "alice" {
		t.Errorf("list after delete: %s", b)
	}
	if status, _, _ := e.do("GET", "/api/v1/sessions?limit=x", nil); status != 400 {
		t.Errorf("bad limit: %d", status)
	}
}
