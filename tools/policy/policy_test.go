package policy

import (
	"context"
	"slices"
	"testing"
)

func TestAllowedDecisions(t *testing.T) {
	cases := []struct {
		name, json string
		tool       Tool
		rule       string
		match      string
	}{
		{"no policy fields allow all", `{}`, builtin("bash"), RuleDefault, ""},
		{"profile", `{"profile":"coding"}`, builtin("bash"), RuleProfile, "profile:coding"},
		{"profile full", `{"profile":"full"}`, mcpTool("gh__x"), RuleProfile, "profile:full"},
		{"allow glob", `{"allow":["gh__*"]}`, mcpTool("gh__x"), RuleAllow, "gh__*"},
		{"allow within profile", `{"profile":"coding","allow":["read"]}`, builtin("read"), RuleAllow, "read"},
		{"alsoAllow over profile", `{"profile":"readonly","alsoAllow":["group:agents"]}`, Tool{Name: "helper", Kind: KindAgent}, RuleAlsoAllow, "group:agents"},
		{"alsoAllow over empty allow", `{"allow":[],"alsoAllow":["lookup"]}`, Tool{Name: "lookup", Kind: KindRuleChain}, RuleAlsoAllow, "lookup"},
		{"mcp server group", `{"allow":["group:mcp:gh"]}`, mcpTool("gh__x"), RuleAllow, "group:mcp:gh"},
		{"chains group", `{"allow":["group:chains"]}`, Tool{Name: "lookup", Kind: KindRuleChain}, RuleAllow, "group:chains"},
		{"allow null is no allow list", `{"allow":null}`, builtin("bash"), RuleDefault, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := restrictionsOf(t, node(c.json))
			d := r.Decide(c.tool)
			if !d.Allowed() || d.Rule != c.rule || d.Match != c.match || d.Err() != nil {
				t.Fatalf("decision %+v, want allowed by %s %q", d, c.rule, c.match)
			}
		})
	}
}

func TestProfilesMatchTheirMembers(t *testing.T) {
	cases := []struct {
		profile string
		allowed []string
		denied  []string
	}{
		{"coding", []string{"read", "write", "edit", "glob", "grep", "skill", "bash", "web_fetch", "web_search"}, []string{"test_add"}},
		{"readonly", []string{"read", "glob", "grep", "skill"}, []string{"write", "edit", "bash", "web_fetch", "web_search"}},
		{"minimal", nil, []string{"read", "skill", "bash"}},
		{"full", []string{"read", "bash", "test_add"}, nil},
	}
	for _, c := range cases {
		r := restrictionsOf(t, node(`{"profile":"`+c.profile+`"}`))
		for _, n := range c.allowed {
			if !r.Decide(builtin(n)).Allowed() {
				t.Errorf("%s: %s refused", c.profile, n)
			}
		}
		for _, n := range c.denied {
			if r.Decide(builtin(n)).Allowed() {
				t.Errorf("%s: %s allowed", c.profile, n)
			}
		}
		// Other kinds: only full lets chains, agents and MCP tools through.
		for _, tl := range []Tool{{Name: "x", Kind: KindRuleChain}, {Name: "y", Kind: KindAgent}, mcpTool("s__z")} {
			if got := r.Decide(tl).Allowed(); got != (c.profile == "full") {
				t.Errorf("%s: %s %s allowed=%v", c.profile, tl.Kind, tl.Name, got)
			}
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for _, s := range []string{"", "  ", "null"} {
		if p, err := Parse([]byte(s)); p != nil || err != nil {
			t.Fatalf("%q: %v %v", s, p, err)
		}
	}
	if _, err := Parse([]byte(`{} {}`)); err == nil {
		t.Fatal("two objects accepted")
	}
}

func TestRestrictionsLayers(t *testing.T) {
	srv, _ := Parse([]byte(`{"deny":["bash"],"subagentDeny":["web_fetch"]}`))
	own, _ := Parse([]byte(`{"profile":"coding","subagentDeny":["write"]}`))
	var none *Restrictions
	if !none.Empty() || none.Nested() != nil || none.With("x", nil) != nil || !none.Decide(builtin("bash")).Allowed() {
		t.Fatal("nil restrictions restrict")
	}
	top := none.With(LayerServer, srv).With(NodeLayer("a", "agent"), own)
	if top.With(LayerServer, srv) != top {
		t.Fatal("the same policy was added twice")
	}
	if got := top.Layers(); !slices.Equal(got, []string{"server", "node a/agent"}) {
		t.Fatalf("layers %v", got)
	}
	nested := top.Nested()
	if nested != top.Nested() {
		t.Fatal("Nested is not cached")
	}
	want := []string{"server", "node a/agent", "server (subagentDeny)", "node a/agent (subagentDeny)"}
	if got := nested.Layers(); !slices.Equal(got, want) {
		t.Fatalf("nested layers %v", got)
	}
	// The callee's node adds its own layer; the server's is not repeated,
	// and nesting once more adds no second subagentDeny layer.
	callee, _ := Parse([]byte(`{}`))
	sub := nested.With(LayerServer, srv).With(NodeLayer("b", "agent"), callee)
	if got := sub.Nested().Layers(); len(got) != 5 {
		t.Fatalf("second level layers %v", got)
	}
	if d := top.Decide(builtin("write")); !d.Allowed() {
		t.Fatalf("write refused at the top: %+v", d)
	}
	if d := sub.Decide(builtin("write")); d.Allowed() || d.Rule != RuleSubagentDeny || d.Layer != "node a/agent" {
		t.Fatalf("write in the sub-agent: %+v", d)
	}
	if d := sub.Nested().Decide(builtin("web_fetch")); d.Allowed() || d.Rule != RuleSubagentDeny || d.Layer != LayerServer {
		t.Fatalf("web_fetch two levels down: %+v", d)
	}
	if d := sub.Decide(builtin("bash")); d.Allowed() || d.Rule != RuleDeny || d.Layer != LayerServer || !d.Inherited {
		t.Fatalf("bash in the sub-agent: %+v", d)
	}
}

func TestContext(t *testing.T) {
	ctx := context.Background()
	if FromContext(ctx) != nil {
		t.Fatal("restrictions from nowhere")
	}
	p, _ := Parse([]byte(`{"deny":["bash"]}`))
	r := (*Restrictions)(nil).With(LayerServer, p)
	if FromContext(WithRestrictions(ctx, r)) != r {
		t.Fatal("lost in the context")
	}
}

func TestServerOf(t *testing.T) {
	for name, want := range map[string]string{"gh__issues": "gh", "a-b__c__d": "a-b", "bash": "", "__x": ""} {
		if got := ServerOf(name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
