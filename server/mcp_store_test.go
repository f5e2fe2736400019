package server

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// TestMCPSaveRuleChain: save_rule_chain hot-deploys a valid chain, writes
// its file and announces the new tool; an invalid chain is refused with its
// errors, and the chain deployed before keeps running, its file untouched.
func TestMCPSaveRuleChain(t *testing.T) {
	e := newMCPEnv(t)
	c, n := connect(t, e.store.MCP(), "2025-11-25")

	// A new agent, sent as an object on one line, the way a model sends it.
	var dsl map[string]any
	if err := json.Unmarshal([]byte(agentDSL("", "Poet", map[string]any{"description": "Writes poems."},
		map[string]any{"systemPrompt": "You are helper."})), &dsl); err != nil {
		t.Fatal(err)
	}
	res := callTool(t, c, "save_rule_chain", map[string]any{"id": "poet", "dsl": dsl}, nil)
	if res.IsError || !strings.Contains(text(res), `"poet" deployed and saved to `) {
		t.Fatalf("save: %s", text(res))
	}
	file, err := os.ReadFile(filepath.Join(e.dir, "poet.json"))
	if err != nil || !strings.Contains(string(file), "\n  \"metadata\"") || !strings.Contains(string(file), `"id": "poet"`) {
		t.Fatalf("the saved file (indented, with its id): %s %v", file, err)
	}
	// The notification is sent asynchronously by the transport.
	waitFor(t, "tools/list_changed after a new chain", func() bool { return len(n.of(string(mcp.MethodNotificationToolsListChanged))) > 0 })
	if tool, ok := listTools(t, c)["poet"]; !ok || tool.Description != "Writes poems." {
		t.Fatalf("the new chain's tool: %+v", tool)
	}
	if res := callTool(t, c, "poet", map[string]any{"message": "a poem"}, nil); res.IsError || text(res) != "helper answer" {
		t.Fatalf("calling the new chain: %s", text(res))
	}

	// Invalid: an unknown node type. Refused, the old chain still answers.
	before, _ := os.ReadFile(filepath.Join(e.dir, "helper.json"))
	broken := `{"ruleChain":{"id":"helper","name":"Broken"},"metadata":{"nodes":[{"id":"x","type":"no/such","configuration":{}}]}}`
	res = callTool(t, c, "save_rule_chain", map[string]any{"dsl": broken}, nil)
	if !res.IsError || !strings.Contains(text(res), "no/such") || !strings.Contains(text(res), "not deployed") {
		t.Fatalf("broken chain: %s", text(res))
	}
	var problems struct {
		Errors []Problem `json:"errors"`
	}
	if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &problems) != nil || len(problems.Errors) != 1 {
		t.Fatalf("structured errors: %s", b)
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, "helper.json")); string(after) != string(before) {
		t.Fatal("a refused chain was written")
	}
	if res := callTool(t, c, "helper", map[string]any{"message": "still there?"}, nil); res.IsError || text(res) != "helper answer" {
		t.Fatalf("the old chain after a refused save: %s", text(res))
	}

	// Static problems, each with its path.
	for _, tc := range []struct {
		args       map[string]any
		path, says string
	}{
		{map[string]any{"id": "other", "dsl": `{"ruleChain":{"id":"helper"},"metadata":{"nodes":[]}}`}, "ruleChain.id", `saved as "other"`},
		{map[string]any{"dsl": `{"ruleChain":{},"metadata":{"nodes":[]}}`}, "ruleChain.id", "missing"},
		{map[string]any{"dsl": `{"metadata":{"nodes":[]}}`}, "ruleChain", "missing"},
		{map[string]any{"id": "../escape", "dsl": `{"ruleChain":{},"metadata":{"nodes":[]}}`}, "ruleChain.id", "cannot name a chain file"},
		{map[string]any{"dsl": `{"ruleChain":`}, "", "not valid JSON at line 1, column"},
		// The checks of "ruleagent validate", with the deployed chains as context.
		{map[string]any{"dsl": broken}, "metadata.nodes[0].type", "unknown component type"},
	} {
		res := callTool(t, c, "save_rule_chain", tc.args, nil)
		if !res.IsError || !strings.Contains(text(res), tc.says) || (tc.path != "" && !strings.Contains(text(res), tc.path+": ")) {
			t.Errorf("%v: %s", tc.args, text(res))
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.dir), "escape.json")); err == nil {
		t.Fatal("a chain was written outside the chains folder")
	}
	// A call to a chain that is not deployed is what RuleGo accepts (it
	// resolves calls when they run): saved, with a warning at its path.
	res = callTool(t, c, "save_rule_chain", map[string]any{"id": "caller", "dsl": chainDSL("", "Caller", nil, map[string]any{"id": "a", "type": "ai/agent",
		"configuration": map[string]any{"url": "http://127.0.0.1:9/v1", "model": "m", "tools": []any{map[string]any{"type": "agent", "targetId": "nowhere"}}}})}, nil)
	if res.IsError || !strings.Contains(text(res), `"path":"metadata.nodes[0].configuration.tools[0].targetId"`) || !strings.Contains(text(res), `no chain \"nowhere\"`) {
		t.Errorf("a call to a missing chain: %s", text(res))
	}

	// Statically fine, but the engine cannot build it: refused too, and
	// the running chain is kept.
	res = callTool(t, c, "save_rule_chain", map[string]any{"dsl": jsDSL("upper", "Upper", map[string]any{"mcp": true}, "return {")}, nil)
	if !res.IsError || !strings.Contains(text(res), `chain "upper" is invalid`) {
		t.Fatalf("a script that does not compile: %s", text(res))
	}
	if res := callTool(t, c, "upper", map[string]any{"text": "kept"}, nil); res.IsError || text(res) != `{"upper":"KEPT"}` {
		t.Fatalf("upper after a refused save: %s", text(res))
	}
}

// TestMCPCatalogTools: list_rule_chains lists every chain with the tool
// that runs it; get_rule_chain returns a chain's DSL.
func TestMCPCatalogTools(t *testing.T) {
	c, _ := connect(t, newMCPEnv(t).store.MCP(), "2025-11-25")
	res := callTool(t, c, "list_rule_chains", nil, nil)
	var list struct {
		Chains []struct {
			ID   string `json:"id"`
			Tool string `json:"tool"`
		} `json:"chains"`
	}
	if err := json.Unmarshal([]byte(text(res)), &list); err != nil || res.IsError {
		t.Fatalf("list: %s %v", text(res), err)
	}
	tools := map[string]string{}
	for _, ch := range list.Chains {
		tools[ch.ID] = ch.Tool
	}
	if len(list.Chains) != 7 || tools["helper"] != "helper" || tools["plain"] != "" || tools["天气 agent"] != mcpserve.ToolName("天气 agent") {
		t.Fatalf("list: %+v", list.Chains)
	}

	res = callTool(t, c, "get_rule_chain", map[string]any{"id": "upper"}, nil)
	var dsl struct {
		RuleChain struct {
			ID string `json:"id"`
		} `json:"ruleChain"`
		Metadata struct {
			Nodes []any `json:"nodes"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(text(res)), &dsl); err != nil || dsl.RuleChain.ID != "upper" || len(dsl.Metadata.Nodes) != 1 {
		t.Fatalf("get: %s %v", text(res), err)
	}
	if res := callTool(t, c, "get_rule_chain", map[string]any{"id": "nope"}, nil); !res.IsError || !strings.Contains(text(res), "list_rule_chains") {
		t.Fatalf("get of a missing chain: %s", text(res))
	}
}

// TestStoreSaveWithoutFolder: a store without a chains folder deploys and
// writes nothing; a chain loaded from a file is saved back to that file.
func TestStoreSaveWithoutFolder(t *testing.T) {
	s, _ := OpenStore("", NewConfig(nil))
	defer s.Close()
	info, err := s.Save("echo", []byte(jsDSL("", "Echo", map[string]any{"mcp": true}, "return {msg: msg, metadata: metadata, msgType: msgType};")))
	if err != nil || info.ID != "echo" || !info.MCP {
		t.Fatalf("%+v %v", info, err)
	}
	if _, ok := s.File("echo"); ok {
		t.Fatal("a store without a folder recorded a file")
	}
	_, err = s.Save("", []byte(`{"ruleChain":{"id":"bad"},"metadata":{"nodes":[{"id":"x","type":"no/such"}]}}`))
	var invalid *InvalidChainError
	if !errors.Is(err, ErrInvalidChain) || !errors.As(err, &invalid) || invalid.ID != "bad" || len(invalid.Problems) != 1 {
		t.Fatalf("%v", err)
	}

	dir := t.TempDir()
	nested := filepath.Join(dir, "team", "echo-file.json")
	_ = os.MkdirAll(filepath.Dir(nested), 0o755)
	if err := os.WriteFile(nested, []byte(jsDSL("echo", "Echo", nil, "return {msg: msg, metadata: metadata, msgType: msgType};")), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, errs := OpenStore(dir, NewConfig(nil))
	defer s2.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, err := s2.Save("echo", []byte(jsDSL("echo", "Echo v2", nil, "return {msg: msg, metadata: metadata, msgType: msgType};"))); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(nested); !strings.Contains(string(b), "Echo v2") {
		t.Fatalf("not saved back to its own file: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "echo.json")); err == nil {
		t.Fatal("saved to a second file")
	}
	if entries, _ := os.ReadDir(filepath.Dir(nested)); len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

// udfProbe is a test node that records, at Init, what the configuration
// holds under components.SelfMCPUDF.
type udfProbe struct{}

var probedSelf atomic.Value // *mcpserver.MCPServer seen at Init

func (udfProbe) Type() string                                   { return "test/udfProbe" }
func (udfProbe) New() types.Node                                { return udfProbe{} }
func (udfProbe) OnMsg(ctx types.RuleContext, msg types.RuleMsg) { ctx.TellSuccess(msg) }
func (udfProbe) Destroy()                                       {}
func (udfProbe) Init(rc types.Config, _ types.Configuration) error {
	if sc, ok := rc.Udf[components.SelfMCPUDF].(types.Script); ok && sc.Type == components.SelfMCPUDFType {
		if srv, ok := sc.Content.(*mcpserver.MCPServer); ok {
			probedSelf.Store(srv)
		}
	}
	return nil
}

func init() {
	if err := rulego.Registry.Register(udfProbe{}); err != nil {
		panic(err)
	}
}

// TestSelfMCPRegisteredBeforeChainsLoad: a node initialising while the
// store loads its folder already finds the store's MCP server, and the
// caller's configuration is left alone.
func TestSelfMCPRegisteredBeforeChainsLoad(t *testing.T) {
	dir := t.TempDir()
	probe := chainDSL("probe", "Probe", nil, map[string]any{"id": "p", "type": "test/udfProbe", "configuration": map[string]any{}})
	if err := os.WriteFile(filepath.Join(dir, "probe.json"), []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig(nil)
	s, errs := OpenStore(dir, cfg)
	defer s.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got, _ := probedSelf.Load().(*mcpserver.MCPServer); got == nil || got != s.MCP() {
		t.Fatalf("the node saw %v, want the store's server %p", got, s.MCP())
	}
	if _, leaked := cfg.Udf[components.SelfMCPUDF]; leaked {
		t.Fatal("OpenStore wrote into the caller's Udf map")
	}
}
