package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// ruleagent run keeps a user's session in the store it is given, and the
// sessions command lists, shows, exports, switches the model of and
// deletes it on that store.
func TestRunAndSessionsCommandOnAStore(t *testing.T) {
	llm := llmtest.NewServer(t, memoScript())
	setLLM(t, llm.URL)
	chains := memoChains(t, map[string]any{"scope": "user", "allowedModels": []any{map[string]any{"name": "big", "model": "big-model"}}})
	store := "bolt:" + filepath.Join(t.TempDir(), "sessions.db")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	say := func(user, text string) {
		t.Helper()
		if code, out, errb := cli("run", "memo", "--chains", chains, "--session-store", store, "--user", user, "--input", text); code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errb)
		}
	}
	say("alice", "I like tea")
	say("alice", "what do I like?")
	if got := lastMemoRequest(t, llm); got != "system: "+memoPrompt+"\nuser: I like tea\nassistant: Noted: I like tea\nuser: what do I like?" {
		t.Errorf("second run's request:\n%s", got)
	}
	if code, _, errb := cli("run", "memo", "--chains", chains, "--session-store", store, "--input", "hi"); code == 0 || !strings.Contains(errb, "userId") {
		t.Errorf("run without --user: exit %d %s", code, errb)
	}

	id := "memo:user:alice"
	on := []string{"--session-store", store, "--chains", chains}
	if code, out, errb := cli(append([]string{"sessions", "list"}, on...)...); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "4 ") {
		t.Errorf("list: exit %d\n%s%s", code, out, errb)
	}
	if code, out, _ := cli(append([]string{"sessions", "show", id}, on...)...); code != 0 || !strings.Contains(out, "assistant: Noted: what do I like?") {
		t.Errorf("show: exit %d\n%s", code, out)
	}
	if code, out, errb := cli(append([]string{"sessions", "model", id, "huge"}, on...)...); code == 0 || !strings.Contains(errb, "allowedModels (big)") {
		t.Errorf("model not allowed: exit %d %s%s", code, out, errb)
	}
	if code, out, errb := cli(append([]string{"sessions", "model", id, "big"}, on...)...); code != 0 || !strings.Contains(out, "now runs on big") {
		t.Errorf("model: exit %d %s%s", code, out, errb)
	}
	say("alice", "bigger?")
	if r := llm.Requests(); r[len(r)-1].Model != "big-model" {
		t.Errorf("after sessions model the run went to %q", r[len(r)-1].Model)
	}
	file := filepath.Join(t.TempDir(), "alice.json")
	if code, out, errb := cli(append([]string{"sessions", "export", id, "--out", file}, on...)...); code != 0 {
		t.Fatalf("export: exit %d %s%s", code, out, errb)
	}
	var exp struct {
		Format  string
		Session struct {
			Messages []json.RawMessage
			Model    string
		}
	}
	b, _ := os.ReadFile(file)
	if json.Unmarshal(b, &exp) != nil || exp.Format != "ruleagent.session.v1" || len(exp.Session.Messages) != 6 || exp.Session.Model != "big" {
		t.Errorf("export file: %s", b)
	}
	if code, _, errb := cli(append([]string{"sessions", "delete", id}, on...)...); code != 0 {
		t.Errorf("delete: exit %d %s", code, errb)
	}
	if code, _, errb := cli(append([]string{"sessions", "show", id}, on...)...); code != 1 || !strings.Contains(errb, "no such session") {
		t.Errorf("show after delete: exit %d %s", code, errb)
	}
	if code, _, _ := cli("sessions", "frobnicate"); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
}
