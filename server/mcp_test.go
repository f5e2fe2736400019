package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/mcpserve"
)

// notes collects the notifications an MCP client receives.
type notes struct {
	mu  sync.Mutex
	all []mcp.JSONRPCNotification
}

func (n *notes) add(x mcp.JSONRPCNotification) {
	n.mu.Lock()
	n.all = append(n.all, x)
	n.mu.Unlock()
}

// of returns the params of the notifications of a method so far.
func (n *notes) of(method string) []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []map[string]any
	for _, x := range n.all {
		if x.Method == method {
			out = append(out, x.Params.AdditionalFields)
		}
	}
	return out
}

// connect starts an in-process client of srv speaking protocol version v.
func connect(t *testing.T, srv *mcpserver.MCPServer, v string) (*client.Client, *notes) {
	t.Helper()
	c, err := client.NewInProcessClient(srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	n := &notes{}
	c.OnNotification(n.add)
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = v
	req.Params.ClientInfo = mcp.Implementation{Name: "ruleagent-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c, n
}

func listTools(t *testing.T, c *client.Client) map[string]mcp.Tool {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]mcp.Tool{}
	for _, tool := range res.Tools {
		out[tool.Name] = tool
	}
	return out
}

func callTool(t *testing.T, c *client.Client, name string, args any, progressToken any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	if progressToken != nil {
		req.Params.Meta = &mcp.Meta{ProgressToken: progressToken}
	}
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func schemaOf(t *testing.T, tool mcp.Tool) map[string]any {
	t.Helper()
	b, err := json.Marshal(tool)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		InputSchema map[string]any `json:"inputSchema"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.InputSchema
}

// TestMCPToolsAreTheChains: agent chains and chains marked mcp are tools
// with their descriptions and schemas; other chains are not.
func TestMCPToolsAreTheChains(t *testing.T) {
	c, _ := connect(t, newMCPEnv(t).store.MCP(), "2025-11-25")
	tools := listTools(t, c)
	weather := mcpserve.ToolName("天气 agent")
	want := []string{"fails", "get_rule_chain", "helper", "list_rule_chains", "reader", "save_rule_chain", "slow", "upper", weather}
	got := slices.Sorted(func(yield func(string) bool) {
		for name := range tools {
			if !yield(name) {
				return
			}
		}
	})
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	cases := []struct {
		tool, desc, required string
		property             string
	}{
		{"helper", "Answers questions.", "message", "message"},
		{"reader", "Reader", "message", "message"}, // no description: the chain's name
		{weather, "Tells the weather.", "city", "city"},
		{"upper", "Upper-cases text.", "text", "text"},
	}
	for _, tc := range cases {
		tool := tools[tc.tool]
		if tool.Description != tc.desc {
			t.Errorf("%s: description %q, want %q", tc.tool, tool.Description, tc.desc)
		}
		sch := schemaOf(t, tool)
		props, _ := sch["properties"].(map[string]any)
		req, _ := sch["required"].([]any)
		if sch["type"] != "object" || props[tc.property] == nil || len(req) != 1 || req[0] != tc.required {
			t.Errorf("%s: schema %v", tc.tool, sch)
		}
	}
	if sch := schemaOf(t, tools["fails"]); sch["type"] != "object" || sch["additionalProperties"] != true {
		t.Errorf("a business chain without inputSchema takes any object: %v", sch)
	}
}

// TestMCPCallChains: answers are text, failures are isError results with
// the error (never protocol errors), arguments reach the chain intact.
func TestMCPCallChains(t *testing.T) {
	e := newMCPEnv(t)
	model := e.model
	c, _ := connect(t, e.store.MCP(), "2025-11-25")

	res := callTool(t, c, "helper", map[string]any{"message": "What is up?"}, nil)
	if res.IsError || text(res) != "helper answer" {
		t.Fatalf("helper: %+v", res)
	}
	if last := model.LastRequest(); last.LastUserText() != "What is up?" {
		t.Fatalf("the model was asked %q", last.LastUserText())
	}
	if res.Meta == nil || res.Meta.AdditionalFields["model"] != "test-model" || res.Meta.AdditionalFields["runId"] == "" {
		t.Errorf("_meta %+v", res.Meta)
	}
	// Without a price table the run's usage comes without a cost.
	if u := readMetaUsage(t, "helper", res.Meta.AdditionalFields).Run; len(u.Usage) == 0 || u.Usage[0].Model != "test-model" ||
		u.Usage[0].TotalTokens == 0 || u.Cost != "" || u.Currency != "" {
		t.Errorf("helper's run usage in _meta: %+v", u)
	}

	res = callTool(t, c, "helper", map[string]any{"messages": []any{
		map[string]any{"role": "user", "content": "first"},
		map[string]any{"role": "assistant", "content": "ok"},
		map[string]any{"role": "user", "content": "second"},
	}}, nil)
	if res.IsError || text(res) != "helper answer" || len(model.LastRequest().Messages) < 3 {
		t.Fatalf("OpenAI messages: %+v (model saw %d messages)", res, len(model.LastRequest().Messages))
	}

	res = callTool(t, c, "helper", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text(res), `needs "message"`) {
		t.Fatalf("no message: %+v", res)
	}

	// A custom schema: the arguments are the input, as sent (integers
	// beyond 2^53 keep their digits).
	res = callTool(t, c, mcpserve.ToolName("天气 agent"), json.RawMessage(`{"city":"Paris","station":12345678901234567890}`), nil)
	if res.IsError || text(res) != "sunny" || model.LastRequest().LastUserText() != `{"city":"Paris","station":12345678901234567890}` {
		t.Fatalf("custom schema: %+v, model saw %q", res, model.LastRequest().LastUserText())
	}

	res = callTool(t, c, "upper", map[string]any{"text": "shout"}, nil)
	if res.IsError || text(res) != `{"upper":"SHOUT"}` {
		t.Fatalf("upper: %+v", res)
	}
	if res.Meta != nil && res.Meta.AdditionalFields[mcpserve.UsageMetaKey] != nil {
		t.Errorf("upper calls no model, yet its _meta carries usage: %+v", res.Meta.AdditionalFields)
	}

	res = callTool(t, c, "fails", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text(res), "the fails chain always fails") {
		t.Fatalf("fails: %+v", res)
	}
}

// TestMCPProgress: a client that sends a progressToken sees the agent's
// steps as progress notifications, numbered upwards, and none after the
// result.
func TestMCPProgress(t *testing.T) {
	c, n := connect(t, newMCPEnv(t).store.MCP(), "2025-11-25")
	res := callTool(t, c, "reader", map[string]any{"message": "What do the notes say?"}, "tok-1")
	if res.IsError || text(res) != readerAnswer {
		t.Fatalf("reader: %+v", res)
	}
	time.Sleep(50 * time.Millisecond) // anything sent late would arrive now
	var messages []string
	last := 0.0
	for _, p := range n.of(string(mcp.MethodNotificationProgress)) {
		if p["progressToken"] != "tok-1" {
			t.Fatalf("progress for token %v", p["progressToken"])
		}
		v := number(p["progress"])
		if v <= last {
			t.Fatalf("progress %v after %v", v, last)
		}
		last = v
		messages = append(messages, p["message"].(string))
	}
	text := 0
	for _, m := range messages {
		if m == "writing the answer" {
			text++
		}
	}
	head := []string{"started", "calling read", "read returned", "asking the model again (turn 2)", "writing the answer"}
	// 22 chunks over about 330ms, reported at most every 250ms: 2 or 3.
	if len(messages) < len(head) || !slices.Equal(messages[:len(head)], head) || text < 2 || text > 3 {
		t.Fatalf("progress messages %q", messages)
	}

	// Without a token, no progress.
	before := len(n.of(string(mcp.MethodNotificationProgress)))
	callTool(t, c, "helper", map[string]any{"message": "hi"}, nil)
	if after := len(n.of(string(mcp.MethodNotificationProgress))); after != before {
		t.Fatalf("%d progress notifications without a token", after-before)
	}
}

// TestMCPCancel: cancelling the call cancels the run: the model request
// ends, and the call returns at once.
func TestMCPCancel(t *testing.T) {
	e := newMCPEnv(t)
	c, _ := connect(t, e.store.MCP(), "2025-11-25")
	ctx, cancel := context.WithCancel(context.Background())
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "slow"
		req.Params.Arguments = map[string]any{"message": "take your time"}
		res, err := c.CallTool(ctx, req)
		done <- outcome{res, err}
	}()
	await(t, e.hang.arrived, "the model request")
	cancel()
	await(t, e.hang.gone, "the run to let go of the model")
	select {
	case o := <-done:
		// In process the handler's answer may win the race with the
		// client's own cancellation: then it says the run was cancelled.
		if o.err == nil && (!o.res.IsError || o.res.Meta == nil || o.res.Meta.AdditionalFields["errorCode"] != "cancelled") {
			t.Fatalf("a cancelled call answered %+v", o.res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
}

// number reads a JSON number that may not have been through JSON.
func number(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case float64:
		return n
	case json.Number:
		f, _ := n.Float64()
		return f
	}
	return -1
}

// TestMCPSelfMode: what an mcp tool with server "self" does: an in-process
// client with the default (newest) protocol, called from inside a run whose
// context carries that run's Sink. The chain answers, reports progress, and
// keeps its events out of the caller's stream.
func TestMCPSelfMode(t *testing.T) {
	e := newMCPEnv(t)
	c, n := connect(t, e.store.MCP(), "")
	var caller events.Recorder
	req := mcp.CallToolRequest{}
	req.Params.Name = "reader"
	req.Params.Arguments = map[string]any{"message": "What do the notes say?"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "self-1"}
	res, err := c.CallTool(events.WithSink(context.Background(), &caller), req)
	if err != nil || res.IsError || text(res) != readerAnswer {
		t.Fatalf("%+v %v", res, err)
	}
	if len(n.of(string(mcp.MethodNotificationProgress))) < 4 {
		t.Fatalf("progress %v", n.of(string(mcp.MethodNotificationProgress)))
	}
	req.Params.Meta = nil // and without progress
	if res, err := c.CallTool(events.WithSink(context.Background(), &caller), req); err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	if got := caller.Types(); len(got) > 0 {
		t.Fatalf("the called chain wrote into the caller's stream: %v", got)
	}
	callTool(t, c, "save_rule_chain", map[string]any{"id": "poet", "dsl": agentDSL("", "Poet", nil, map[string]any{"systemPrompt": "You are helper."})}, nil)
	waitFor(t, "tools/list_changed", func() bool { return len(n.of(string(mcp.MethodNotificationToolsListChanged))) > 0 })
}
