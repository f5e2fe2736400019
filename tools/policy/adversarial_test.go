package policy

import (
	"errors"
	"strings"
	"testing"
)

// The adversarial policy cases of issue 11: attempts to get a tool past a
// policy, or to make a policy open by mistake. Each asserts the refusal and
// its reason (the rule, the entry and the layer that refused). End-to-end
// cases (the wrapper refusing a hallucinated name, sub-agents, rule-chain
// tools and the self MCP path) live beside the code they go through.

func builtin(name string) Tool { return Tool{Name: name, Kind: KindBuiltin} }

func mcpTool(name string) Tool { return Tool{Name: name, Kind: KindMCP, Server: ServerOf(name)} }

type layerSpec struct {
	name string
	json string
}

func server(js string) layerSpec { return layerSpec{LayerServer, js} }
func node(js string) layerSpec   { return layerSpec{NodeLayer("c", "agent"), js} }
func caller(js string) layerSpec { return layerSpec{NodeLayer("parent", "agent"), js} }

func restrictionsOf(t *testing.T, layers ...layerSpec) *Restrictions {
	t.Helper()
	var r *Restrictions
	for _, l := range layers {
		p, err := Parse([]byte(l.json))
		if err != nil {
			t.Fatalf("%s: %v", l.json, err)
		}
		r = r.With(l.name, p)
	}
	return r
}

func TestAdversarialDecisions(t *testing.T) {
	cases := []struct {
		name string
		// above are the layers of the calling agent (its Nested restrictions
		// are inherited); layers are this agent's own.
		above  []layerSpec
		layers []layerSpec
		tool   Tool
		rule   string
		match  string
		layer  string
		// inherited: the refusal comes from a calling agent's layer.
		inherited bool
	}{
		// Deny is final.
		{name: "deny beats allow", layers: []layerSpec{node(`{"allow":["bash"],"deny":["bash"]}`)}, tool: builtin("bash"),
			rule: RuleDeny, match: "bash", layer: "node c/agent"},
		{name: "deny beats alsoAllow", layers: []layerSpec{node(`{"alsoAllow":["bash"],"deny":["group:runtime"]}`)}, tool: builtin("bash"),
			rule: RuleDeny, match: "group:runtime", layer: "node c/agent"},
		{name: "deny glob beats profile full and alsoAllow", layers: []layerSpec{node(`{"profile":"full","alsoAllow":["web_fetch"],"deny":["web_*"]}`)},
			tool: builtin("web_fetch"), rule: RuleDeny, match: "web_*", layer: "node c/agent"},
		{name: "node alsoAllow cannot re-add a server deny", layers: []layerSpec{server(`{"deny":["bash"]}`), node(`{"alsoAllow":["bash"]}`)},
			tool: builtin("bash"), rule: RuleDeny, match: "bash", layer: LayerServer},
		{name: "node profile full cannot widen server readonly", layers: []layerSpec{server(`{"profile":"readonly"}`), node(`{"profile":"full"}`)},
			tool: builtin("write"), rule: RuleProfile, match: "profile:readonly", layer: LayerServer},
		{name: "node allow cannot widen server allow", layers: []layerSpec{server(`{"allow":["read"]}`), node(`{"allow":["read","write"]}`)},
			tool: builtin("write"), rule: RuleAllow, layer: LayerServer},
		{name: "node alsoAllow cannot widen server profile", layers: []layerSpec{server(`{"profile":"minimal"}`), node(`{"alsoAllow":["*"]}`)},
			tool: builtin("read"), rule: RuleProfile, match: "profile:minimal", layer: LayerServer},

		// An explicitly empty allow list allows nothing.
		{name: "empty allow", layers: []layerSpec{node(`{"allow":[]}`)}, tool: builtin("read"), rule: RuleAllow, layer: "node c/agent"},
		{name: "empty allow under profile full", layers: []layerSpec{node(`{"profile":"full","allow":[]}`)}, tool: mcpTool("gh__issues"),
			rule: RuleAllow, layer: "node c/agent"},
		{name: "empty server allow under an open node", layers: []layerSpec{server(`{"allow":[]}`), node(`{}`)}, tool: Tool{Name: "lookup", Kind: KindRuleChain},
			rule: RuleAllow, layer: LayerServer},
		{name: "profile minimal is empty", layers: []layerSpec{node(`{"profile":"minimal"}`)}, tool: builtin("skill"),
			rule: RuleProfile, match: "profile:minimal", layer: "node c/agent"},

		// Globs and groups match no more than they say.
		{name: "a name is not a prefix", layers: []layerSpec{node(`{"allow":["read"]}`)}, tool: builtin("read_secrets"), rule: RuleAllow, layer: "node c/agent"},
		{name: "a name is not a suffix match", layers: []layerSpec{node(`{"allow":["web_search"]}`)}, tool: builtin("web_search_v2"), rule: RuleAllow, layer: "node c/agent"},
		{name: "an MCP server group is not a prefix of another server", layers: []layerSpec{node(`{"allow":["group:mcp:git"]}`)},
			tool: mcpTool("git-hub__create_issue"), rule: RuleAllow, layer: "node c/agent"},
		{name: "an MCP server group stops at the separator", layers: []layerSpec{node(`{"allow":["group:mcp:git"]}`)},
			tool: mcpTool("git_x__status"), rule: RuleAllow, layer: "node c/agent"},
		{name: "an MCP server group holds no builtin", layers: []layerSpec{node(`{"allow":["group:mcp:self"]}`)},
			tool: builtin("self__bash"), rule: RuleAllow, layer: "node c/agent"},
		{name: "group:fs is builtins only, not a chain named read", layers: []layerSpec{node(`{"allow":["group:fs"]}`)},
			tool: Tool{Name: "read", Kind: KindRuleChain}, rule: RuleAllow, layer: "node c/agent"},
		{name: "profile readonly is builtins only, not an MCP tool named like one", layers: []layerSpec{node(`{"profile":"readonly"}`)},
			tool: Tool{Name: "read", Kind: KindAgent}, rule: RuleProfile, match: "profile:readonly", layer: "node c/agent"},
		{name: "group:mcp holds no sub-agent", layers: []layerSpec{node(`{"allow":["group:mcp"]}`)},
			tool: Tool{Name: "mcp__helper", Kind: KindAgent}, rule: RuleAllow, layer: "node c/agent"},
		{name: "a deny by name catches every kind of that name", layers: []layerSpec{node(`{"deny":["bash"]}`)},
			tool: Tool{Name: "bash", Kind: KindRuleChain}, rule: RuleDeny, match: "bash", layer: "node c/agent"},
		{name: "a ? glob is one character", layers: []layerSpec{node(`{"allow":["re?d"]}`)}, tool: builtin("rea_d"), rule: RuleAllow, layer: "node c/agent"},

		// Case tricks: deny folds case, allow does not.
		{name: "deny in upper case", layers: []layerSpec{node(`{"deny":["BASH"]}`)}, tool: builtin("bash"), rule: RuleDeny, match: "BASH", layer: "node c/agent"},
		{name: "deny glob in mixed case", layers: []layerSpec{node(`{"deny":["Web_*"]}`)}, tool: builtin("web_search"), rule: RuleDeny, match: "Web_*", layer: "node c/agent"},
		{name: "deny catches a tool whose name differs in case", layers: []layerSpec{node(`{"deny":["delete_all"]}`)},
			tool: Tool{Name: "Delete_All", Kind: KindRuleChain}, rule: RuleDeny, match: "delete_all", layer: "node c/agent"},
		{name: "control: a deny reaches no other tool", layers: []layerSpec{node(`{"deny":["delete_all"]}`)}, tool: mcpTool("db__delete")},
		{name: "allow in another case allows nothing", layers: []layerSpec{node(`{"allow":["Read"]}`)}, tool: builtin("read"), rule: RuleAllow, layer: "node c/agent"},

		// Sub-agents and chain tools inherit the caller's restrictions.
		{name: "a sub-agent cannot use a tool its caller denied", above: []layerSpec{caller(`{"deny":["group:runtime"]}`)},
			layers: []layerSpec{node(`{"alsoAllow":["bash"]}`)}, tool: builtin("bash"), rule: RuleDeny, match: "group:runtime", layer: "node parent/agent", inherited: true},
		{name: "a sub-agent cannot widen its caller's allow list", above: []layerSpec{caller(`{"allow":["read","group:agents"]}`)},
			layers: []layerSpec{node(`{"profile":"full"}`)}, tool: builtin("write"), rule: RuleAllow, layer: "node parent/agent", inherited: true},
		{name: "subagentDeny binds the agents run", above: []layerSpec{caller(`{"subagentDeny":["group:web"]}`)},
			layers: []layerSpec{node(`{}`)}, tool: builtin("web_fetch"), rule: RuleSubagentDeny, match: "group:web", layer: "node parent/agent", inherited: true},
		{name: "the server's subagentDeny binds the agents run", above: []layerSpec{server(`{"subagentDeny":["bash"]}`)},
			layers: []layerSpec{server(`{"subagentDeny":["bash"]}`), node(`{}`)}, tool: builtin("bash"), rule: RuleSubagentDeny, match: "bash", layer: LayerServer, inherited: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *Restrictions
			if len(c.above) > 0 {
				r = restrictionsOf(t, c.above...).Nested()
			}
			for _, l := range c.layers {
				p, err := Parse([]byte(l.json))
				if err != nil {
					t.Fatal(err)
				}
				r = r.With(l.name, p)
			}
			d := r.Decide(c.tool)
			if c.rule == "" { // a control: the entry does not reach this tool
				if !d.Allowed() {
					t.Fatalf("refused %+v", d)
				}
				return
			}
			if d.Allowed() {
				t.Fatalf("%s allowed: %+v", c.tool.Name, d)
			}
			if d.Rule != c.rule || d.Match != c.match || d.Layer != c.layer || d.Inherited != c.inherited {
				t.Fatalf("decision %+v, want rule %q match %q layer %q inherited %v", d, c.rule, c.match, c.layer, c.inherited)
			}
			err := d.Err()
			var den *Denial
			if !errors.Is(err, ErrDenied) || !errors.As(err, &den) || den.Tool != c.tool.Name {
				t.Fatalf("error %v is not a typed denial", err)
			}
			if !strings.Contains(err.Error(), c.tool.Name) || !strings.Contains(err.Error(), "do not call it again") {
				t.Fatalf("message %q", err)
			}
			if strings.HasPrefix(c.match, "group:") && !strings.Contains(err.Error(), c.match) {
				t.Fatalf("message %q does not name the group %s", err, c.match)
			}
			if c.match != "" && !strings.HasPrefix(c.match, "group:") && !strings.HasPrefix(c.match, "profile:") && strings.Contains(err.Error(), "("+c.rule+" "+c.match) {
				t.Fatalf("message %q quotes the pattern %s", err, c.match)
			}
		})
	}
}

func TestAdversarialConfig(t *testing.T) {
	cases := []struct {
		name, json, path, msg string
	}{
		{"unknown profile", `{"profile":"open"}`, "profile", `unknown profile "open"`},
		{"profile in another case", `{"profile":"ReadOnly"}`, "profile", `unknown profile "ReadOnly"`},
		{"profile star", `{"profile":"*"}`, "profile", `unknown profile "*"`},
		{"unknown group", `{"allow":["group:filesystem"]}`, "allow[0]", `unknown group "group:filesystem"`},
		{"group in another case", `{"deny":["group:FS"]}`, "deny[0]", `unknown group "group:FS"`},
		{"group prefix in another case", `{"deny":["Group:fs"]}`, "deny[0]", "is not a tool name"},
		{"empty MCP server group", `{"deny":["group:mcp:"]}`, "deny[0]", "the server's name is missing"},
		{"MCP server group with the separator", `{"alsoAllow":["group:mcp:a__b"]}`, "alsoAllow[0]", `never contains "__"`},
		{"MCP server group glob", `{"subagentDeny":["group:mcp:*"]}`, "subagentDeny[0]", "only letters, digits"},
		{"negation is not a thing", `{"deny":["!bash"]}`, "deny[0]", "is not a tool name"},
		{"padded name", `{"allow":[" bash"]}`, "allow[0]", "is not a tool name"},
		{"dotted prefix pattern", `{"allow":["mcp.*"]}`, "allow[0]", "is not a tool name"},
		{"empty entry", `{"deny":[""]}`, "deny[0]", "empty entry"},
		{"broken glob", `{"deny":["web_["]}`, "deny[0]", "not a valid glob"},
		{"allow as a string", `{"allow":"bash"}`, "allow", "an array of strings"},
		{"unknown field", `{"allowed":["bash"]}`, "allowed", `unknown field (did you mean "allow"?)`},
		{"not an object", `["bash"]`, "", "must be a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse([]byte(c.json))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%s: got %v, %v; want a config error", c.json, p, err)
			}
			if ce.Path != c.path || !strings.Contains(ce.Msg, c.msg) {
				t.Fatalf("error %q at %q, want %q at %q", ce.Msg, ce.Path, c.msg, c.path)
			}
		})
	}
}
