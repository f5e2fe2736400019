package server

import (
	"encoding/json"
	"strings"
	"testing"
)

// oneAgentDSL is a chain of one ai/agent node with the given configuration
// (url and model filled in).
func oneAgentDSL(id string, cfg map[string]any) string {
	c := map[string]any{"url": "${global.llm_url}", "model": "${global.model}"}
	for k, v := range cfg {
		c[k] = v
	}
	b, _ := json.Marshal(map[string]any{"ruleChain": map[string]any{"id": id, "name": id},
		"metadata": map[string]any{"nodes": []any{map[string]any{"id": "agent", "type": "ai/agent", "configuration": c}}, "connections": []any{}}})
	return string(b)
}

// A mistake found deep in a builtin's config parser (bash's sandbox
// paths) keeps its JSON path all the way to the 400 body, under the node.
func TestPutRefusalKeepsTheDeepPath(t *testing.T) {
	e := newAPIEnv(t, Options{})
	dsl := oneAgentDSL("deep", map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "bash",
		"config": map[string]any{"workDir": t.TempDir(), "sandboxRead": []any{"/usr", "relative/dir"}}}}})
	code, body, _ := e.do("PUT", "/api/v1/chains/deep", dsl)
	var refusal apiError
	if code != 400 || json.Unmarshal(body, &refusal) != nil || len(refusal.Problems) == 0 {
		t.Fatalf("%d %s", code, body)
	}
	p := refusal.Problems[0]
	if p.Path != "metadata.nodes[0].configuration.tools[0].config.sandboxRead[1]" || !strings.Contains(p.Message, `"relative/dir" must be an absolute path`) {
		t.Fatalf("problem %+v in %s", p, body)
	}
}

// Malformed JSON is located by line and column, in the 400 body as in
// ruleagent validate.
func TestPutRefusalLocatesBadJSON(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("PUT", "/api/v1/chains/broken", "{\n  \"ruleChain\": {\"id\": \"broken\"},\n  \"metadata\": {\"nodes\": [,]}\n}")
	if code != 400 || !strings.Contains(string(body), "line 3, column 26") {
		t.Fatalf("%d %s", code, body)
	}
}
