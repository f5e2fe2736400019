package components

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools/policy"
)

func saverConfig() map[string]any {
	var m map[string]any
	_ = json.Unmarshal([]byte(`{"url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}", "workspace": "ws",
	 "tools": [{"type": "builtin", "name": "read"},
	           {"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "timeout": "30s", "deny": ["curl"]}},
	           {"type": "mcp", "config": {"server": "self"}},
	           {"type": "agent", "targetId": "helper"}]}`), &m)
	return m
}

// savedChain is a chain of one agent with the saver's LLM settings and
// workspace, and the given tools.
func savedChain(t *testing.T, toolsJSON string, extra map[string]any) []byte {
	t.Helper()
	var ts []any
	if err := json.Unmarshal([]byte(toolsJSON), &ts); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"url": "${global.llm_url}", "key": "${global.api_key}", "model": "other-model", "workspace": "ws", "tools": ts}
	for k, v := range extra {
		cfg[k] = v
	}
	return dsl(t, chain("saved", "saved", nil, []map[string]any{{"id": "a", "type": AgentType, "configuration": cfg}}))
}

// A chain an agent saves holds no more power than the agent: the same
// tools or narrower ones, its own LLM endpoints, the chains it can call,
// nothing that reaches outside the process, no server setting.
func TestSavedByHoldsNoMorePowerThanTheSaver(t *testing.T) {
	saver := Saver{ChainID: "builder", NodeID: "agent", Config: saverConfig()}
	check := SaveCheck{Savers: []Saver{saver}, Exposed: func(id string) bool { return id == "exposed" }}
	ok := []struct{ name, tools string }{
		{"the same tools", `[{"type": "builtin", "name": "read"}, {"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "timeout": "30s", "deny": ["curl"]}}]`},
		{"narrower bash", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "required", "timeout": 5000, "deny": ["curl", "wget"]}}]`},
		{"a filtered self", `[{"type": "mcp", "name": "chains", "config": {"server": "self", "tools": ["list_rule_chains"]}}]`},
		{"a chain it calls", `[{"type": "agent", "targetId": "helper"}, {"type": "rulechain", "name": "x", "targetId": "exposed"}]`},
	}
	for _, c := range ok {
		if ps := SavedBy(savedChain(t, c.tools, nil), check); len(ps) != 0 {
			t.Errorf("%s: refused: %v", c.name, ps)
		}
	}
	refused := []struct {
		name, tools string
		extra       map[string]any
		path, says  string
	}{
		{"sandbox off", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "off", "timeout": "30s", "deny": ["curl"]}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "sandbox: a weaker sandbox"},
		{"wider network", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "network": "any", "deny": ["curl"]}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "network: a wider network"},
		{"interpreters", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "interpreters": "on", "deny": ["curl"]}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "interpreters on"},
		{"fewer denials", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort"}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "deny: fewer deny entries (curl)"},
		{"longer timeout", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "timeout": "10m", "deny": ["curl"]}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "timeout: a higher limit"},
		{"another shell", `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "deny": ["curl"], "env": {"PATH": "/opt/x"}}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "env: differs"},
		{"a tool it lacks", `[{"type": "builtin", "name": "web_fetch"}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", `the saving agent "agent" (chain builder) has no web_fetch tool`},
		{"a stdio server", `[{"type": "mcp", "config": {"command": "sh", "args": ["-c", "id"]}}]`, nil,
			"metadata.nodes[0].configuration.tools[0]", "args: another server"},
		{"another workspace", `[{"type": "builtin", "name": "read"}]`, map[string]any{"workspace": "/"},
			"metadata.nodes[0].configuration.tools[0]", `works in "ws", not "/"`},
		{"another LLM", `[]`, map[string]any{"url": "https://llm.example.net/v1"},
			"metadata.nodes[0].configuration.url", "does not talk to the LLM endpoint https://llm.example.net/v1"},
		{"the key elsewhere", `[]`, map[string]any{"failover": []any{map[string]any{"url": "https://llm.example.net/v1", "key": "${global.api_key}", "model": "m"}}},
			"metadata.nodes[0].configuration.url", "https://llm.example.net/v1"},
		{"a server setting", `[]`, map[string]any{"systemPrompt": "Say ${global.api_key}."},
			"metadata.nodes[0].configuration.systemPrompt", "cannot read the server's setting ${global.api_key}"},
		{"a chain it cannot call", `[{"type": "agent", "targetId": "admin"}]`, nil,
			"metadata.nodes[0].configuration.tools[0].targetId", `cannot call chain "admin"`},
	}
	for _, c := range refused {
		ps := SavedBy(savedChain(t, c.tools, c.extra), check)
		if len(ps) == 0 || ps[0].Path != c.path || !strings.Contains(ps[0].Msg, c.says) {
			t.Errorf("%s: want %s: ~%q, got %v", c.name, c.path, c.says, ps)
		}
	}

	// RuleGo components that reach outside the process, endpoints, secrets.
	outside := dsl(t, chain("saved", "saved", nil, []map[string]any{
		{"id": "r", "type": "restApiCall", "configuration": map[string]any{"restEndpointUrlPattern": "http://169.254.169.254/"}},
		{"id": "j", "type": "jsTransform", "configuration": map[string]any{"jsScript": "return {msg: '${global.api_key}'};"}},
		{"id": "f", "type": "flow", "configuration": map[string]any{"targetId": "admin"}}}))
	ps := SavedBy(outside, check)
	for i, want := range []string{"metadata.nodes[0].type", "metadata.nodes[1].configuration.jsScript", "metadata.nodes[2].configuration.targetId"} {
		if len(ps) <= i || ps[i].Path != want {
			t.Fatalf("want a problem at %s: %v", want, ps)
		}
	}

	// Every agent the run is within bounds it: an outer agent without bash.
	outer := Saver{ChainID: "boss", NodeID: "agent", Config: map[string]any{"workspace": "ws", "tools": []any{map[string]any{"type": "agent", "targetId": "builder"}}}}
	two := SaveCheck{Savers: []Saver{saver, outer}}
	if ps := SavedBy(savedChain(t, `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "deny": ["curl"]}}]`, nil), two); len(ps) != 1 || !strings.Contains(ps[0].Msg, `"agent" (chain boss) has no bash tool`) {
		t.Fatalf("outer saver: %v", ps)
	}

	// A tool the run's policies deny the saver is denied to what it saves.
	deny, err := policy.Parse([]byte(`{"deny": ["group:runtime"]}`))
	if err != nil {
		t.Fatal(err)
	}
	check.Restrictions = (*policy.Restrictions)(nil).With(policy.LayerServer, deny)
	if ps := SavedBy(savedChain(t, `[{"type": "builtin", "name": "bash", "config": {"sandbox": "best-effort", "deny": ["curl"]}}]`, nil), check); len(ps) != 1 || !strings.Contains(ps[0].Msg, "may not use this tool") {
		t.Fatalf("policy: %v", ps)
	}
	if ps := SavedBy(savedChain(t, `[]`, nil), SaveCheck{}); ps != nil {
		t.Fatal("no saver, nothing to check")
	}
}
