package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestComponentsAPI(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("GET", "/api/v1/components", nil)
	var c struct {
		Nodes []struct {
			Type          string    `json:"type"`
			Category      string    `json:"category"`
			Label         string    `json:"label"`
			RelationTypes *[]string `json:"relationTypes"`
			Fields        []struct {
				Name  string `json:"name"`
				Label string `json:"label"`
				Desc  string `json:"desc"`
			} `json:"fields"`
		} `json:"nodes"`
		Endpoints []map[string]any `json:"endpoints"`
		ToolTypes []struct {
			Type   string          `json:"type"`
			Fields json.RawMessage `json:"fields"`
		} `json:"toolTypes"`
		Builtins []struct {
			Name         string          `json:"name"`
			ConfigSchema json.RawMessage `json:"configSchema"`
			ArgsSchema   json.RawMessage `json:"argsSchema"`
		} `json:"builtins"`
	}
	if code != 200 || json.Unmarshal(body, &c) != nil {
		t.Fatalf("%d %.500s", code, body)
	}
	byType := map[string]int{}
	for i, n := range c.Nodes {
		byType[n.Type] = i
	}
	agent, ok := byType["ai/agent"]
	if !ok {
		t.Fatal("no ai/agent form")
	}
	a := c.Nodes[agent]
	if a.Category != "ai" || a.Label != "AI Agent" || a.RelationTypes == nil || len(*a.RelationTypes) != 3 || len(a.Fields) < 10 {
		t.Errorf("ai/agent form: %+v", a)
	}
	for _, core := range []string{"jsTransform", "jsFilter", "switch", "flow", "restApiCall", "end"} {
		if _, ok := byType[core]; !ok {
			t.Errorf("no %s form", core)
		}
	}
	if len(c.Endpoints) == 0 || len(c.ToolTypes) != 4 || len(c.Builtins) < 7 {
		t.Errorf("endpoints %d, tool types %d, builtins %d", len(c.Endpoints), len(c.ToolTypes), len(c.Builtins))
	}
	for _, b := range c.Builtins {
		if !json.Valid(b.ConfigSchema) || !json.Valid(b.ArgsSchema) {
			t.Errorf("%s: schemas %s %s", b.Name, b.ConfigSchema, b.ArgsSchema)
		}
	}
}

// discover lists an MCP server's tools as an agent would see them: here
// the in-process self server, filtered to two tools.
func TestDiscoverMCPTools(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/tools/mcp/discover", map[string]any{"type": "mcp", "name": "me",
		"config": map[string]any{"server": "self", "tools": []string{"list_rule_chains", "chat"}}})
	var got struct {
		Tools []discoveredTool `json:"tools"`
	}
	if code != 200 || json.Unmarshal(body, &got) != nil || len(got.Tools) != 2 {
		t.Fatalf("%d %s", code, body)
	}
	for _, tool := range got.Tools {
		if !strings.HasPrefix(tool.Name, "me__") || tool.Name != "me__"+tool.RemoteName || !json.Valid(tool.InputSchema) {
			t.Errorf("tool %+v", tool)
		}
	}
	if code, body, _ = e.do("POST", "/api/v1/tools/mcp/discover", map[string]any{"type": "mcp", "config": map[string]any{"server": "http://127.0.0.1:9/mcp", "connectTimeout": "1s"}}); code != 502 {
		t.Errorf("unreachable server: %d %s", code, body)
	}
	if code, body, _ = e.do("POST", "/api/v1/tools/mcp/discover", map[string]any{"type": "builtin", "name": "read"}); code != 400 {
		t.Errorf("not an mcp entry: %d %s", code, body)
	}
}

func TestAuthCORSAndLimits(t *testing.T) {
	e := newAPIEnv(t, Options{Token: "tok", CORSOrigins: []string{"http://app.example"}, MaxBodyBytes: 1 << 10})
	// No token: 401 on every API route; health and the editor's page
	// (which asks for the token) stay open.
	e.opts.Token = ""
	for _, p := range []string{"/api/v1/chains", "/api/v1/runs", "/api/v1/components", "/metrics"} {
		if code, _, _ := e.do("GET", p, nil); code != 401 {
			t.Errorf("%s without a token: %d", p, code)
		}
	}
	if code, _, _ := e.do("GET", "/healthz", nil); code != 200 {
		t.Errorf("healthz: %d", code)
	}
	e.opts.Token = "tok"

	// CORS: the configured origin only.
	code, _, hdr := e.do("OPTIONS", "/api/v1/chains/chat/agui", nil, "Origin", "http://app.example", "Access-Control-Request-Method", "POST")
	if code != 204 || hdr.Get("Access-Control-Allow-Origin") != "http://app.example" || !strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", code, hdr)
	}
	if _, _, hdr = e.do("GET", "/api/v1/chains", nil, "Origin", "http://evil.example"); hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("another origin allowed: %v", hdr)
	}

	// Bodies over the limit: 413, in each API's shape.
	big := `{"input":"` + strings.Repeat("x", 2<<10) + `"}`
	if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", big); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), `"error"`) {
		t.Errorf("big body: %d %s", code, body)
	}
	if code, body, _ := e.do("PUT", "/api/v1/chains/chat", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("big chain: %d %s", code, body)
	}

	// Unknown routes: JSON 404s.
	if code, body, _ := e.do("GET", "/api/v1/nothing", nil); code != 404 || !strings.Contains(string(body), `"error"`) {
		t.Errorf("unknown api route: %d %s", code, body)
	}
	if code, body, _ := e.do("GET", "/v1/nothing", nil); code != 404 || !strings.Contains(string(body), `"error":{`) {
		t.Errorf("unknown openai route: %d %s", code, body)
	}
}

func TestMetricsAfterRuns(t *testing.T) {
	e := newAPIEnv(t, Options{})
	e.do("POST", "/api/v1/chains/tools/run", map[string]any{"input": "lookup please"})
	e.do("POST", "/api/v1/chains/broken/run", map[string]any{"input": "x"})
	_, body, _ := e.do("GET", "/metrics", nil)
	for _, want := range []string{
		`ruleagent_chain_runs_total{chain="tools",outcome="success",source="run"}`,
		`ruleagent_chain_runs_total{chain="broken",outcome="error",source="run"}`,
		`ruleagent_llm_tokens_total{kind="prompt",model="test-model"}`,
		`ruleagent_tool_calls_total{outcome="ok",tool="lookup"}`,
		`ruleagent_active_runs 0`,
		`ruleagent_chain_run_duration_seconds_bucket{chain="tools"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
