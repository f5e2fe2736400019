package mcpserve

import (
	"regexp"
	"strings"
	"testing"
)

// llmFunctionName is what OpenAI and Anthropic accept as a function name,
// stricter than MCP's own rule.
var llmFunctionName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := []struct {
		id   string
		want string // "" when the id is renamed; then prefix is checked
		pfx  string
	}{
		{id: "send_email", want: "send_email"},
		{id: "code-reviewer", want: "code-reviewer"},
		{id: "Agent007", want: "Agent007"},
		{id: long, want: long},
		{id: long + "b", pfx: strings.Repeat("a", 52) + "__"},
		{id: "天气 agent", pfx: "agent__"},
		{id: "天气", pfx: "chain__"},
		{id: "my agent.v2", pfx: "my_agent_v2__"},
		{id: "a__b", pfx: "a_b__"},
		{id: "_lead_", want: "_lead_"},
		{id: "__lead", pfx: "lead__"},
		{id: "list_rule_chains", pfx: "list_rule_chains__"},
		{id: "save_rule_chain", pfx: "save_rule_chain__"},
		{id: "", pfx: "chain__"},
	}
	for _, tc := range cases {
		got := ToolName(tc.id)
		if !llmFunctionName.MatchString(got) {
			t.Errorf("ToolName(%q) = %q, not a valid function name", tc.id, got)
		}
		switch {
		case tc.want != "" && got != tc.want:
			t.Errorf("ToolName(%q) = %q, want %q", tc.id, got, tc.want)
		case tc.want == "" && (!strings.HasPrefix(got, tc.pfx) || len(got) != len(tc.pfx)+toolHashLen):
			t.Errorf("ToolName(%q) = %q, want %q and %d hex digits", tc.id, got, tc.pfx, toolHashLen)
		}
	}
}

// TestToolNameInjective: ids that look alike, or look like renamed ids,
// get different names.
func TestToolNameInjective(t *testing.T) {
	renamed := ToolName("天气 agent")
	ids := []string{
		"a b", "a.b", "a_b", "a__b", "a-b", "a/b", "a  b", "a\tb", "A b",
		"天气 agent", "雨 agent", renamed, renamed + "x",
		"list_rule_chains", "list_rule_chains__", ToolName("list_rule_chains"),
		strings.Repeat("x", 64) + "1", strings.Repeat("x", 64) + "2", strings.Repeat("x", 64),
	}
	seen := map[string]string{}
	for _, id := range ids {
		name := ToolName(id)
		if other, dup := seen[name]; dup {
			t.Errorf("%q and %q are both %q", other, id, name)
		}
		seen[name] = id
	}
	for _, builtin := range []string{ToolListChains, ToolGetChain, ToolSaveChain} {
		if other, dup := seen[builtin]; dup {
			t.Errorf("chain %q takes the name of built-in %s", other, builtin)
		}
	}
}
