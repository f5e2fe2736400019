package llmtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GuardPrompt is the system prompt of the guarded agent (see GuardedRule).
const GuardPrompt = "You are the guarded agent."

// GuardedRule scripts the guarded agent of GuardedChains, the one the
// approval tests pause: it looks key A-1 up (a lookup call, which needs
// approval), then answers "Result: " and what the tool found. Asked again
// in its session (a last user message with "again"), it answers
// "I remember: " and its previous answer.
func GuardedRule() Rule {
	return Rule{Match: SystemContains(GuardPrompt), Script: ScriptFunc(func(r *Request) Response {
		if res := r.ToolResults(); len(res) > 0 {
			return Reply("Result: " + res[0].Content)
		}
		if strings.Contains(r.LastUserText(), "again") {
			return Reply("I remember: " + r.Messages[len(r.Messages)-2].Content)
		}
		return Calls(Call("lookup", `{"key":"A-1"}`))
	})}
}

// AgentChain is the definition of chain id: one ai/agent node with the
// system prompt, no retries, and the extra configuration.
func AgentChain(id, prompt string, extra map[string]any) map[string]any {
	cfg := map[string]any{"systemPrompt": prompt, "maxRetries": 0}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{"ruleChain": map[string]any{"id": id, "name": id},
		"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{},
			"nodes": []any{map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": cfg}}}}
}

// GuardedChains are the chains GuardedRule's agent runs in, by id: lookup
// (its message's key back as {"found": key}) and guarded (the agent, with
// lookup as a tool whose calls need approval, and the extra
// configuration, such as a session).
func GuardedChains(extra map[string]any) map[string]any {
	cfg := map[string]any{
		"approval": map[string]any{"tools": []any{"lookup"}},
		"tools": []any{map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{
		"lookup": map[string]any{"ruleChain": map[string]any{"id": "lookup", "name": "Lookup"},
			"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{}, "nodes": []any{map[string]any{
				"id": "js", "type": "jsTransform", "name": "JS", "configuration": map[string]any{
					"jsScript": "return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};"}}}}},
		"guarded": AgentChain("guarded", GuardPrompt, cfg),
	}
}

// WriteChains writes each chain as dir/<id>.json.
func WriteChains(t testing.TB, dir string, chains map[string]any) {
	t.Helper()
	for id, c := range chains {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
