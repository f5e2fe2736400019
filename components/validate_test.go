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
		{"builtin config", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeOut": 5}}}})), "metadata.nodes[0].configuration.tools[0].config", "timeOut"},
		{"bind", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "rulechain", "name": "t", "targetId": "x2", "bind": map[string]any{"u": "cookie.u"}}}})), "metadata.nodes[0].configuration.tools[0].bind.u", "unknown source"},
		{"target", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "agent", "targetId": "nowhere"}}})), "metadata.nodes[0].configuration.tools[0].targetId", `no chain "nowhere"`},
		{"mcp", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "mcp", "config": map[string]any{"serverUrl": "http://x"}}}})), "metadata.nodes[0].configuration.tools[0].config.serverUrl", "unknown field"},
		{"mcp scheme", dsl(t, agentWith("x", map[string]any{"tools": []any{map[string]any{"type": "mcp", "config": map[string]any{"server": "ftp://x"}}}})), "metadata.nodes[0].configuration.tools[0].config.server", ""},
	}
	for _, c := range cases {
		ps := Validate([]ChainFile{{Path: c.name + ".json", DSL: c.dsl}}, nil, nil)
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
	ps := Validate([]ChainFile{{Path: "a.json", DSL: a}, {Path: "b.json", DSL: b}}, []ChainFile{{Path: "lib/c.json", DSL: c}}, nil)
	if len(ps) != 1 || !strings.Contains(ps[0].Msg, "cycle") || !strings.Contains(ps[0].Msg, "a -> b -> c -> a") {
		t.Fatalf("%v", ps)
	}
	// Without the context file, c is unknown; known() can vouch for it.
	ps = Validate([]ChainFile{{Path: "b.json", DSL: b}}, nil, nil)
	if len(ps) != 1 || ps[0].Path != "metadata.nodes[0].configuration.tools[0].targetId" {
		t.Fatalf("%v", ps)
	}
	if ps = Validate([]ChainFile{{Path: "b.json", DSL: b}}, nil, func(id string) bool { return id == "c" }); len(ps) != 0 {
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
	if ps := Validate(files, nil, nil); len(ps) != 0 {
		t.Fatalf("%v", ps)
	}
}
