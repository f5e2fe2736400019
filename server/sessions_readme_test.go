package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

// TestREADMESessionExamples runs the shell examples of the README's
// Sessions and memory section, as written, against a real server with the
// chain they describe, and checks what they did.
func TestREADMESessionExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed to run the README's examples")
		}
		t.Skip("curl is not installed")
	}
	llm := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		return llmtest.Reply("You said: " + r.LastUserText())
	}))
	chat := chainDSL("chat", "Chat", nil, agentNode("You chat.", map[string]any{"session": map[string]any{"scope": "thread",
		"allowedModels": []any{map[string]any{"name": "deep", "model": "o3"}}}}))
	e := newSessionEnvLLM(t, sessions.NewMemory(), map[string]string{"chat": chat}, llm)

	work := runShellExamples(t, "## Sessions and memory", e.base, 2)
	// The second run saw the first; the export was saved; the session is
	// gone after the DELETE.
	last := findRequest(e, "What is my name?")
	if last == nil || !strings.Contains(strings.Join(conv(t, last), "\n"), "user: My name is Ada.\nassistant: You said: My name is Ada.") {
		t.Errorf("the second run did not see the first")
	}
	b, err := os.ReadFile(filepath.Join(work, "session-chat_thread_t1.json"))
	var exp struct{ Format string }
	if err != nil || json.Unmarshal(b, &exp) != nil || exp.Format != SessionExportFormat {
		t.Errorf("export file: %v %s", err, b)
	}
	if _, err := e.store.Sessions().Get(t.Context(), "chat:thread:t1"); err == nil {
		t.Error("the session is still there after the DELETE")
	}
}
