package components

import (
	"context"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestSubAgentOutputScrubbedWithItsOwnSecrets: a sub-agent's answer holds
// its own LLM key, a value of its bash tool's env and a GitHub token. The
// parent knows none of them; none may reach the parent's model (the tool
// result) or the parent's event stream (SUBAGENT_FINISHED).
func TestSubAgentOutputScrubbedWithItsOwnSecrets(t *testing.T) {
	const (
		subKey   = "sub-agent-llm-key-0123456789"
		envValue = "sub-tool-env-value-0123456789"
		ghToken  = "ghp_F4kE0123456789abcdefghijABCDEFGHIJkl"
	)
	leaky := "Done. key=" + subKey + " env=" + envValue + " token " + ghToken
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am helper."), Script: llmtest.Always(llmtest.Reply(leaky))},
		llmtest.Rule{Match: llmtest.SystemContains("I am orchestrator."), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("Helper", `{"message":"do it"}`)),
			llmtest.Reply("finished"),
		)},
	))
	p := pool(t)
	helper := chain("helper", "Helper", map[string]any{"description": "Helps."}, []map[string]any{agentNode(srv.URL, "I am helper.", map[string]any{
		"key":   subKey,
		"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"workDir": t.TempDir(), "env": map[string]string{"DEPLOY": envValue}}}},
	})})
	deploy(t, p, helper)
	orch := deploy(t, p, agentChainDef("orchestrator", "Orchestrator", "", srv.URL, agentTool("helper")))
	r := send(t, context.Background(), orch, "go", nil, true)
	oneTerminal(t, r, types.Success)

	var parentSaw string
	for _, req := range srv.Requests() {
		if strings.Contains(req.System(), "I am orchestrator.") {
			for _, m := range req.ToolResults() {
				parentSaw += m.Content
			}
		}
	}
	if !strings.Contains(parentSaw, "Done.") {
		t.Fatalf("the parent's model did not get the sub-agent's answer: %q", parentSaw)
	}
	var finished string
	for _, e := range r.rec.Events() {
		if e.Type == events.SubagentFinished {
			finished += string(e.Result)
		}
	}
	if !strings.Contains(finished, "Done.") {
		t.Fatalf("no SUBAGENT_FINISHED result: %q", finished)
	}
	for _, secret := range []string{subKey, envValue, ghToken} {
		if strings.Contains(parentSaw, secret) {
			t.Errorf("the parent's model saw %q: %s", secret, parentSaw)
		}
		if strings.Contains(finished, secret) {
			t.Errorf("SUBAGENT_FINISHED carries %q: %s", secret, finished)
		}
	}
}
