package components

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func dsl(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func agentWith(id string, cfg map[string]any) map[string]any {
	base := map[string]any{"url": "${global.llm_url}", "model": "${global.model}"}
	for k, v := range cfg {
		base[k] = v
	}
	return chain(id, id, nil, []map[string]any{{"id": "agent", "type": AgentType, "configuration": base}})
}

func TestValidateFindsProblemsWithPaths(t *testing.T) {
	cases := []struct {
		name string
		dsl  []byte
		path string
		msg  string
	}{
		{"json", []byte("{\n  \"ruleChain\": {,\n}"), "", "line 2"},
		{"no nodes", dsl(t, chain("x", "x", nil, nil)), "metadata.nodes", "no nodes"},
		{"unknown type", dsl(t, chain("x", "x", nil, []map[string]any{{"id": "n", "type": "acme/nope"}})), "metadata.nodes[0].type", `unknown component type "acme/nope"`},
		{"dup node", dsl(t, chain("x", "x", nil, []map[string]any{jsNode("n", "", "return msg;"), jsNode("n", "", "return msg;")})), "metadata.nodes[1].id", "duplicate"},
		{"bad conn", dsl(t, chain("x", "x", nil, []map[string]any{jsNode("n", "", "return msg;")}, [3]string{"n", "ghost", "Success"})), "metadata.connections[0].toId", `no node "ghost"`},
		{"first index", func() []byte {
			c := chain("x", "x", nil, []map[string]any{jsNode("n", "", "return msg;")})
			c["metadata"].(map[string]any)["firstNodeIndex"] = 3
			return dsl(t, c)
		}(), "metadata.firstNodeIndex", "not the index"},
		{"agent field", dsl(t, agentWith("x", map[string]any{"maxSteps": 4})), "metadata.nodes[0].configuration.maxSteps", "unknown field"},
		{"agent value", dsl(t, agentWith("x", map[string]any{"timeout": "later"})), "metadata.nodes[0].configuration.timeout", "duration"},
		{"policy profile", dsl(t, agentWith("x", map[string]any{"policy": map[string]any{"profile": "open"}})), "metadata.nodes[0].configuration.policy.profile", `unknown profile "open"`},
		{"policy group", dsl(t, agentWith("x", map[string]any{"policy": map[string]any{"deny": []any{"bash", "group:shell"}}})), "metadata.nodes[0].configuration.policy.deny[1]", `unknown group "group:shell"`},
		{"policy field", dsl(t, agentWith("x", map[string]any{"policy": map[string]any{"denied": []any{"bash"}}})), "metadata.nodes[0].configuration.policy.denied", `unknown field`},
		{"limits value", dsl(t, agentWith("x", map[string]any{"limits": map[string]any{"tokensPerRun": -1}})), "metadata.nodes[0].configuration.limits.tokensPerRun", "negative"},
		{"limits field", dsl(t, agentWith("x", map[string]any{"limits": map[string]any{"tokens": 5}})), "metadata.nodes[0].configuration.limits.tokens", `unknown field`},
		{"tool type", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "plugin"}}})), "metadata.nodes[0].configuration.tools[0].type", "unknown tool type"},
		{"builtin", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bashh"}}})), "metadata.nodes[0].configuration.tools[0].name", `unknown builtin "bashh"`},
		{"builtin config", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeoutt": 5}}}})), "metadata.nodes[0].configuration.tools[0].config.timeoutt", `unknown field (did you mean "timeout"?)`},
		{"builtin factory", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"sandboxWrite": []any{"rel"}}}}})), "metadata.nodes[0].configuration.tools[0].config.sandboxWrite[0]", "must be an absolute path"},
		{"agent type", dsl(t, agentWith("x", map[string]any{"maxStep": "many"})), "metadata.nodes[0].configuration.maxStep", `the string "many" is not an integer`},
		{"unset global", dsl(t, agentWith("x", map[string]any{"workspace": "${global.workspace}/a"})), "metadata.nodes[0].configuration.workspace", "${global.workspace} is not set"},
		{"unset var", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "read", "config": map[string]any{"workDir": "${vars.dir}"}}}})), "metadata.nodes[0].configuration.tools[0].config.workDir", `${vars.dir} is not set: the chain's ruleChain.configuration.vars has no "dir"`},
		{"intent", dsl(t, chain("x", "x", nil, []map[string]any{{"id": "i", "type": IntentType, "configuration": map[string]any{"intents": []any{}}}})), "metadata.nodes[0].configuration.intents", "at least one"},
		{"intent timeout", dsl(t, chain("x", "x", nil, []map[string]any{{"id": "i", "type": IntentType, "configuration": map[string]any{"intents": []any{map[string]any{"name": "a"}}, "firstByteTimeout": "soon"}}})), "metadata.nodes[0].configuration.firstByteTimeout", "is not a duration"},
		{"no ruleChain", []byte(`{"ruleChian": {"id": "x"}, "metadata": {"nodes": []}}`), "ruleChain", "missing"},
		{"bind", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "rulechain", "name": "t", "targetId": "x2", "bind": map[string]any{"u": "cookie.u"}}}})), "metadata.nodes[0].configuration.tools[0].bind.u", "unknown source"},
		{"target", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "agent", "targetId": "nowhere"}}})), "metadata.nodes[0].configuration.tools[0].targetId", `no chain "nowhere"`},
		{"mcp", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "mcp", "config": map[string]any{"serverUrl": "http://x"}}}})), "metadata.nodes[0].configuration.tools[0].config.serverUrl", "unknown field"},
		{"mcp scheme", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "mcp", "config": map[string]any{"server": "ftp://x"}}}})), "metadata.nodes[0].configuration.tools[0].config.server", ""},
	}
	for _, c := range cases {
		ps := Validate([]ChainFile{{Path: c.name + ".json", DSL: c.dsl}}, nil, Options{})
		found := false
		for _, p := range ps {
			if p.File == c.name+".json" && p.Path == c.path && strings.Contains(p.Msg, c.msg) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want %s: ~%q, got %v", c.name, c.path, c.msg, ps)
		}
	}
}

func TestValidateTargetsAndCycles(t *testing.T) {
	a := dsl(t, agentWith("a", map[string]any{"tools": []any{map[string]any{"type": "agent", "targetId": "b"}}}))
	b := dsl(t, agentWith("b", map[string]any{"tools": []any{map[string]any{"type": "rulechain", "name": "c", "targetId": "c"}}}))
	c := dsl(t, chain("c", "c", nil, []map[string]any{{"id": "f", "type": "flow", "configuration": map[string]any{"targetId": "a"}}}))
	ps := Validate([]ChainFile{{Path: "a.json", DSL: a}, {Path: "b.json", DSL: b}}, []ChainFile{{Path: "lib/c.json", DSL: c}}, Options{})
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "cycle") || !strings.Contains(ps[0].Msg, "a -> b -> c -> a") {
		t.Fatalf("%v", ps)
	}
	// Without the context file, c is unknown; known() can vouch for it.
	ps = Validate([]ChainFile{{Path: "b.json", DSL: b}}, nil, Options{})
	if len(ps) != 1 || ps[0].Path != "metadata.nodes[0].configuration.tools[0].targetId" {
		t.Fatalf("%v", ps)
	}
	if ps = Validate([]ChainFile{{Path: "b.json", DSL: b}}, nil, Options{Known: func(id string) bool { return id == "c" }}); len(ps) != 0 {
		t.Fatalf("%v", ps)
	}
}

func TestExampleChainsValidate(t *testing.T) {
	paths, _ := filepath.Glob("../chains/*.json")
	var files []ChainFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ChainFile{Path: p, DSL: b})
	}
	if len(files) < 5 {
		t.Fatalf("%d example chains", len(files))
	}
	if ps := Validate(files, nil, Options{}); len(ps) != 0 {
		t.Fatalf("%v", ps)
	}
}

// Keys RuleGo ignores, or reads in another case, are warnings that name
// the key meant: RuleGo runs such a chain, so nothing is refused.
func TestValidateWarnsOfKeysRuleGoDoesNotRead(t *testing.T) {
	doc := `{"ruleChian": {"id": "k"}, "ruleChain": {"id": "k", "nmae": "K", "descripton": "d", "additionalInfo": {"descriptoin": "d", "layoutX": 1}},
	 "metadata": {"firstNodeIndex": 0, "nodes": [
	   {"id": "a", "type": "jsTransform", "nmae": "A", "configuration": {"jsScrpit": "return {msg: msg};"}},
	   {"id": "f", "type": "flow", "configuration": {"targetID": "k"}},
	   {"id": "g", "type": "ai/agent", "configuration": {"url": "http://x/v1", "model": "m", "tools": [{"type": "agent", "targetID": "k"}]}}],
	 "conections": [], "connections": [{"fromId": "a", "toID": "f", "type": "Success"}]}}`
	ps := Validate([]ChainFile{{Path: "k.json", DSL: []byte(doc)}}, nil, Options{})
	want := map[string]string{
		"ruleChian":                                         `unknown key, ignored by RuleGo (did you mean "ruleChain"?)`,
		"ruleChain.nmae":                                    `(did you mean "name"?)`,
		"ruleChain.descripton":                              "a description goes in ruleChain.additionalInfo.description",
		"ruleChain.additionalInfo.descriptoin":              `not read (did you mean "description"?)`,
		"metadata.conections":                               `(did you mean "connections"?)`,
		"metadata.nodes[0].nmae":                            `(did you mean "name"?)`,
		"metadata.nodes[0].configuration.jsScrpit":          `ignored by the jsTransform component (did you mean "jsScript"?)`,
		"metadata.nodes[1].configuration.targetID":          `read as "targetId"`,
		"metadata.nodes[2].configuration.tools[0].targetID": `read as "targetId"`,
		"metadata.connections[0].toID":                      `read as "toId"`,
		"metadata.nodes[1].configuration.targetId":          "cycle",
	}
	got := map[string]Problem{}
	for _, p := range ps {
		got[p.Path] = p
	}
	for path, msg := range want {
		p, ok := got[path]
		if !ok || !p.Warning || !strings.Contains(p.Msg, msg) {
			t.Errorf("%s: want a warning ~%q, got %+v", path, msg, p)
		}
	}
	if errs, _ := Split(ps); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
	if _, ok := got["ruleChain.additionalInfo.layoutX"]; ok {
		t.Error("an editor's own additionalInfo key was reported")
	}
}

// The sandbox floor refuses, at validate as at load, a tool asking for
// less confinement than the operator's floor, naming the node, the tool,
// the path and the floor.
func TestValidateSandboxFloor(t *testing.T) {
	off := dsl(t, agentWith("x", map[string]any{"tools": []any{
		map[string]any{"type": "builtin", "name": "read"},
		map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"sandbox": "off"}},
		map[string]any{"type": "mcp", "config": map[string]any{"command": "mcp-server"}},
		map[string]any{"type": "mcp", "config": map[string]any{"command": "mcp-server", "sandbox": map[string]any{"mode": "required"}}}}}))
	floor := SandboxFloor{Mode: "best-effort"}
	errs, _ := Split(Validate([]ChainFile{{Path: "x.json", DSL: off}}, nil, Options{Sandbox: floor}))
	if len(errs) != 2 || errs[0].Path != "metadata.nodes[0].configuration.tools[1].config.sandbox" || errs[1].Path != "metadata.nodes[0].configuration.tools[2].config.sandbox" {
		t.Fatalf("%v", errs)
	}
	for _, s := range []string{`node "agent"`, `the bash tool's commands would run with sandbox "off"`, `below the operator's sandbox floor "best-effort"`, "--allow-sandbox-off"} {
		if !strings.Contains(errs[0].Msg, s) {
			t.Errorf("%q lacks %q", errs[0].Msg, s)
		}
	}
	if !strings.Contains(errs[1].Msg, `the stdio MCP server would run with sandbox "off"`) {
		t.Error(errs[1].Msg)
	}
	floor.AllowLower = true
	if errs, _ := Split(Validate([]ChainFile{{Path: "x.json", DSL: off}}, nil, Options{Sandbox: floor})); len(errs) != 0 {
		t.Fatalf("allowed lower: %v", errs)
	}
	req := dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"sandbox": "best-effort"}}}}))
	if errs, _ := Split(Validate([]ChainFile{{Path: "x.json", DSL: req}}, nil, Options{Sandbox: SandboxFloor{Mode: "required"}})); len(errs) != 1 {
		t.Fatalf("best-effort under a required floor: %v", errs)
	}
}
