package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server/mcpserve"
)

// exampleChains reads chains from the repository's chains folder.
func exampleChains(t *testing.T, ids ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(repoRoot, "chains", id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		out[id] = string(b)
	}
	return out
}

// TestMCPDiscoverAndVersions: /mcp answers server/discover with the versions
// it serves (both eras), its capabilities and its identity; every result of
// a 2026-07-28 request carries resultType; a version it does not serve gets
// -32022 with the supported list, over HTTP (400) and in process.
func TestMCPDiscoverAndVersions(t *testing.T) {
	s := chainStore(t, nil, exampleChains(t, "order-status"))
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"

	d := rpc(t, url, "server/discover", nil, nil)
	versions, _ := d.result["supportedVersions"].([]any)
	if !slices.Contains(versions, any(modern)) || !slices.Contains(versions, any("2025-11-25")) {
		t.Errorf("supportedVersions %v", versions)
	}
	caps, _ := d.result["capabilities"].(map[string]any)
	if tools, _ := caps["tools"].(map[string]any); tools["listChanged"] != true {
		t.Errorf("capabilities %v", caps)
	}
	meta, _ := d.result["_meta"].(map[string]any)
	if info, _ := meta["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "ruleagent" {
		t.Errorf("_meta %v", meta)
	}
	for _, m := range []string{"server/discover", "tools/list"} {
		if r := rpc(t, url, m, nil, nil); r.result["resultType"] != "complete" {
			t.Errorf("%s: resultType %v", m, r.result["resultType"])
		}
	}
	call := toolsCall(t, url, "order-status", map[string]any{"arguments": map[string]any{"orderId": "A-1001", "userId": "alice"}}, nil)
	if call.result["resultType"] != "complete" || !strings.Contains(call.text(), "shipped") {
		t.Errorf("tools/call: %v %v", call.result, call.err)
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2099-01-01")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	unsupported := func(where string, status int, e map[string]any) {
		t.Helper()
		data, _ := e["data"].(map[string]any)
		supported, _ := data["supported"].([]any)
		if e["code"] != float64(-32022) || !slices.Contains(supported, any(modern)) || !slices.Contains(supported, any("2025-11-25")) || status != http.StatusBadRequest {
			t.Errorf("%s: status %d, error %v", where, status, e)
		}
	}
	r := readReply(t, resp)
	unsupported("HTTP", r.status, r.err)
	raw, _ := json.Marshal(s.MCP().HandleMessage(context.Background(), json.RawMessage(body)))
	var inproc struct {
		Error map[string]any `json:"error"`
	}
	_ = json.Unmarshal(raw, &inproc)
	unsupported("in process", http.StatusBadRequest, inproc.Error)
}

// TestMCPListenForToolChanges: a 2026-07-28 client that opened
// subscriptions/listen for tools gets notifications/tools/list_changed on
// that stream when a chain is deployed.
func TestMCPListenForToolChanges(t *testing.T) {
	s := chainStore(t, nil, exampleChains(t, "order-status"))
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { _ = c.Close() })
	n := &notes{}
	c.OnNotification(n.add)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	if c.ProtocolVersion() != modern {
		t.Fatalf("negotiated %s", c.ProtocolVersion())
	}
	stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) { t.Errorf("listen: %v", err) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	waitFor(t, "the subscription's acknowledgement", func() bool { return len(n.of("notifications/subscriptions/acknowledged")) > 0 })
	if _, err := s.Save("", []byte(jsDSL("added", "Added", map[string]any{"mcp": true}, "return {msg: msg, metadata: metadata, msgType: msgType};"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "tools/list_changed on the listen stream", func() bool { return len(n.of("notifications/tools/list_changed")) > 0 })
	if _, ok := listTools(t, c)["added"]; !ok {
		t.Error("the new chain is not listed")
	}
}

// waitFor polls cond until it holds, failing after ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestMCPProgressPerNode: a business chain reports each node it completes,
// by name, counting up: on the request's own response stream for a
// 2026-07-28 client, as notifications of the session for a 2025-11-25 one.
func TestMCPProgressPerNode(t *testing.T) {
	s := chainStore(t, nil, exampleChains(t, "order-status"))
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	args := map[string]any{"orderId": "A-1001", "userId": "alice"}
	// The run's start, then each node that completed.
	want := []string{"started", "Check the order id done", "Find the order done"}
	// Over HTTP, mcp-go v1.2.1 can lose the notification its forwarder
	// holds when the response is written (its "intermittent notification
	// delivery"), so there the reports need only come in order.
	check := func(era string, ps []map[string]any, whole bool) {
		t.Helper()
		var msgs []string
		last := 0.0
		for _, p := range ps {
			n, _ := p["progress"].(float64)
			if n <= last {
				t.Errorf("%s: progress %v after %v", era, n, last)
			}
			last = n
			msgs = append(msgs, p["message"].(string))
		}
		i := 0
		for _, m := range msgs {
			for i < len(want) && want[i] != m {
				i++
			}
			if i == len(want) {
				t.Errorf("%s: progress %q is not in the order of %q", era, msgs, want)
				return
			}
			i++
		}
		if len(msgs) == 0 || whole && !slices.Equal(msgs, want) {
			t.Errorf("%s: progress %q, want %q", era, msgs, want)
		}
	}

	r := toolsCall(t, url, "order-status", map[string]any{"arguments": args, "_meta": map[string]any{"progressToken": "p1"}}, nil)
	var ps []map[string]any
	for _, n := range r.notifications {
		if n["method"] == "notifications/progress" && n["progressToken"] == "p1" {
			ps = append(ps, n)
		}
	}
	if !strings.Contains(r.text(), "shipped") {
		t.Fatalf("result %v %v", r.result, r.err)
	}
	check(modern, ps, false)

	c, notes := connect(t, s.MCP(), "2025-11-25")
	if res := callTool(t, c, "order-status", args, "p2"); res.IsError {
		t.Fatal(text(res))
	}
	// mcp-go's in-process client hands notifications over from a goroutine
	// of its own, so they may trail the result.
	waitFor(t, "the progress notifications", func() bool { return len(notes.of("notifications/progress")) >= len(want) })
	var legacy []map[string]any
	for _, p := range notes.of("notifications/progress") {
		p["progress"] = toFloat(p["progress"])
		legacy = append(legacy, p)
	}
	check("2025-11-25", legacy, true)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case float64:
		return n
	case int:
		return float64(n)
	}
	return 0
}

// TestMCPBoundChainsWithheld: a chain whose identity parameter another
// chain binds (support-agent binds order-status's userId) is not an MCP
// tool, so no MCP client (and no agent's "self" entry) can call it with an
// identity of its choosing; it returns once no chain binds it.
func TestMCPBoundChainsWithheld(t *testing.T) {
	s := chainStore(t, map[string]string{"llm_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": "k"},
		exampleChains(t, "order-status", "support-agent"))
	c, n := connect(t, s.MCP(), "2025-11-25")
	if _, ok := listTools(t, c)["order-status"]; ok {
		t.Fatal("order-status is a tool while support-agent binds its userId")
	}
	res := callTool(t, c, mcpserve.ToolListChains, map[string]any{}, nil)
	if !strings.Contains(text(res), `"id":"order-status"`) || strings.Contains(text(res), `"tool":"order-status"`) {
		t.Errorf("list_rule_chains: %s", text(res))
	}
	dsl, _ := s.DSL("support-agent")
	var doc map[string]any
	if err := json.Unmarshal(dsl, &doc); err != nil {
		t.Fatal(err)
	}
	node := doc["metadata"].(map[string]any)["nodes"].([]any)[0].(map[string]any)
	tool := node["configuration"].(map[string]any)["tools"].([]any)[0].(map[string]any)
	if tool["bind"] == nil {
		t.Fatal("the example no longer binds userId; update this test")
	}
	delete(tool, "bind")
	unbound, _ := json.Marshal(doc)
	if _, err := s.Save("support-agent", unbound); err != nil {
		t.Fatal(err)
	}
	if _, ok := listTools(t, c)["order-status"]; !ok {
		t.Fatal("order-status is not a tool once nothing binds it")
	}
	waitFor(t, "tools/list_changed when order-status came back", func() bool { return len(n.of("notifications/tools/list_changed")) > 0 })
}

// TestMCPErrorTextScrubbed: a failed run's error reaches the MCP client
// without the LLM key a provider's 401 quotes, or a URL's password.
func TestMCPErrorTextScrubbed(t *testing.T) {
	const key = "sk-live-0123456789abcdefghij"
	const password = "hunter2-secret-pw"
	model := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: http.StatusUnauthorized,
		ErrorMessage: "Incorrect API key provided: " + key + ". Proxy: https://admin:" + password + "@proxy.internal/v1"}))
	agent := agentDSL("leaky", "Leaky", nil, map[string]any{"url": "${global.llm_url}", "key": "${global.api_key}", "systemPrompt": "You leak.", "retryBackoff": "1ms", "maxRetries": 0})
	s := chainStore(t, map[string]string{"llm_url": model.URL, "model": "m", "api_key": key}, map[string]string{"leaky": agent})
	c, _ := connect(t, s.MCP(), "2025-11-25")
	res := callTool(t, c, "leaky", map[string]any{"message": "hi"}, nil)
	got := text(res)
	if !res.IsError || !strings.Contains(got, "Incorrect API key") {
		t.Fatalf("isError %v: %q", res.IsError, got)
	}
	if strings.Contains(got, key) || strings.Contains(got, password) {
		t.Fatalf("the error text leaks a secret: %q", got)
	}
}

// TestMCPSelfCallInsideAnMCPCall: a chain served to a 2026-07-28 client over
// HTTP runs an agent that calls this server again through its "self" entry;
// the inner call is judged on its own (not by the outer request's Mcp-Name
// header), and the chain it deploys is announced on the listen stream.
func TestMCPSelfCallInsideAnMCPCall(t *testing.T) {
	e := newMCPEnvWith(t, fixtureFiles(t, filepath.Join(conformanceFixtures, "test_trigger_tool_change.json")))
	url := serveLoopback(t, Handler(Options{Store: e.store})) + "/mcp"
	if r := toolsCall(t, url, "test_trigger_tool_change", nil, nil); r.text() != "The tool list changed." {
		t.Fatalf("trigger: %v %v", r.result, r.err)
	}
	reqs := e.model.Requests()
	last := reqs[len(reqs)-1].ToolResults()
	if len(last) != 1 || strings.Contains(last[0].Content, "rror") || !strings.Contains(last[0].Content, "conformance_toggle") {
		t.Fatalf("the agent's call to save_rule_chain: %+v", last)
	}
	if _, ok := e.store.DSL("conformance_toggle"); !ok {
		t.Fatal("the chain was not deployed")
	}
}
