package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ruleagent/ruleagent/telemetry"
)

// record installs an in-memory tracer for the test and returns its
// exporter.
func record(t *testing.T, o telemetry.Options) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp, o)
	t.Cleanup(func() {
		telemetry.Install(nil, telemetry.Options{})
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func byName(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q among %v", name, names(spans))
	return tracetest.SpanStub{}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

const callerTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestOffCostsNothing(t *testing.T) {
	telemetry.Install(nil, telemetry.Options{})
	ctx := context.Background()
	if telemetry.Enabled() || telemetry.CaptureContent() {
		t.Fatal("tracing is on with nothing installed")
	}
	h := http.Header{"Traceparent": {callerTraceparent}}
	allocs := testing.AllocsPerRun(100, func() {
		c, run := telemetry.StartRun(ctx, telemetry.RunInfo{ChainID: "c", RunID: "r"})
		c, agent := telemetry.StartAgent(c, telemetry.AgentInfo{Name: "a"})
		c, chat := telemetry.StartChat(c, telemetry.ChatInfo{Model: "m"})
		chat.End(telemetry.ChatEnd{})
		c, tool := telemetry.StartTool(c, telemetry.ToolInfo{Name: "t"})
		tool.End(telemetry.ToolEnd{})
		c, node := telemetry.StartNode(c, telemetry.NodeInfo{NodeID: "n"})
		node.End("Success", nil, nil)
		agent.End(telemetry.Usage{}, "success", "", "")
		run.End(telemetry.RunEnd{})
		c = telemetry.FromHeaders(c, h)
		c = telemetry.FromTraceparent(c, callerTraceparent, "")
		c = telemetry.NodesUnder(c)
		if telemetry.Headers(c) != nil || c != ctx {
			t.Fatal("tracing off changed the context")
		}
	})
	if allocs != 0 {
		t.Fatalf("tracing off allocates %v times per run", allocs)
	}
}

func TestTraceContextFromCallers(t *testing.T) {
	record(t, telemetry.Options{})
	want, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	wantParent, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	for name, ctx := range map[string]context.Context{
		"headers":     telemetry.FromHeaders(context.Background(), http.Header{"Traceparent": {callerTraceparent}, "Tracestate": {"k=v"}}),
		"traceparent": telemetry.FromTraceparent(context.Background(), callerTraceparent, "k=v"),
		"meta":        telemetry.FromMeta(context.Background(), map[string]any{"traceparent": callerTraceparent, "tracestate": "k=v"}),
	} {
		sc := trace.SpanContextFromContext(ctx)
		if sc.TraceID() != want || sc.SpanID() != wantParent || !sc.IsRemote() || sc.TraceState().Get("k") != "v" {
			t.Errorf("%s: span context %v", name, sc)
		}
	}
	for name, ctx := range map[string]context.Context{
		"malformed": telemetry.FromTraceparent(context.Background(), "00-zz-00f067aa0ba902b7-01", ""),
		"empty":     telemetry.FromMeta(context.Background(), map[string]any{"traceparent": 7}),
	} {
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("%s: a span context came of it", name)
		}
	}
}

func TestTraceContextToServers(t *testing.T) {
	exp := record(t, telemetry.Options{})
	if telemetry.Headers(context.Background()) != nil || telemetry.InjectMeta(context.Background(), nil) != nil {
		t.Fatal("trace context without a span")
	}
	ctx, tool := telemetry.StartTool(telemetry.FromTraceparent(context.Background(), callerTraceparent, "k=v"),
		telemetry.ToolInfo{Name: "search", CallID: "call_1", Kind: "mcp"})
	h := telemetry.Headers(ctx)
	meta := telemetry.InjectMeta(ctx, map[string]any{"progressToken": 1})
	tool.End(telemetry.ToolEnd{})
	sp := exp.GetSpans()[0]
	want := "00-" + sp.SpanContext.TraceID().String() + "-" + sp.SpanContext.SpanID().String() + "-01"
	if h["traceparent"] != want || meta["traceparent"] != want || meta["progressToken"] != 1 {
		t.Fatalf("headers %v, meta %v; want traceparent %s", h, meta, want)
	}
	if h["tracestate"] != "k=v" || meta["tracestate"] != "k=v" {
		t.Fatalf("tracestate not passed on: %v %v", h, meta)
	}
	// Only trace context goes out: no baggage.
	if len(h) != 2 || len(meta) != 3 {
		t.Fatalf("more than trace context passed on: %v %v", h, meta)
	}
}

func TestRunClaimedByFirstAgent(t *testing.T) {
	exp := record(t, telemetry.Options{})
	ctx, run := telemetry.StartRun(context.Background(), telemetry.RunInfo{Agent: "Support", ChainID: "support", RunID: "run-1",
		ThreadID: "t-1", Source: "agui"})
	actx, a1 := telemetry.StartAgent(ctx, telemetry.AgentInfo{Name: "agent", ChainID: "support", RunID: "run-1", ThreadID: "t-1",
		Model: "gpt-4o-mini", Provider: "openai"})
	_, a2 := telemetry.StartAgent(ctx, telemetry.AgentInfo{Name: "second", ChainID: "support", RunID: "run-1b", Model: "m2", Provider: "p"})
	_, chat := telemetry.StartChat(actx, telemetry.ChatInfo{Model: "gpt-4o-mini", Provider: "openai"})
	chat.End(telemetry.ChatEnd{Model: "gpt-4o-mini-2024", Usage: telemetry.Usage{Input: 10, Output: 5}})
	a2.End(telemetry.Usage{Input: 1, Output: 1}, "success", "", "")
	a1.End(telemetry.Usage{Input: 10, Output: 5}, "success", "", "")
	run.End(telemetry.RunEnd{Outcome: "error", ErrorType: "llm_error", Message: "the model failed",
		Usage: &telemetry.Usage{Input: 11, Output: 6, CacheRead: 4, Reasoning: 2}})

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("spans %v, want the run, the second agent's own span and the chat", names(spans))
	}
	rs := byName(t, spans, "invoke_agent Support")
	a := attrs(rs)
	for k, v := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "Support", "gen_ai.agent.id": "support",
		"gen_ai.conversation.id": "t-1", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.provider.name": "openai",
		"ruleagent.run.id": "run-1", "ruleagent.run.source": "agui", "ruleagent.run.outcome": "error", "error.type": "llm_error",
		"gen_ai.usage.input_tokens": int64(11), "gen_ai.usage.output_tokens": int64(6),
		"gen_ai.usage.cache_read.input_tokens": int64(4), "gen_ai.usage.reasoning.output_tokens": int64(2)} {
		if got := a[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("run span %s = %v, want %v", k, got, v)
		}
	}
	if rs.Status.Code != codes.Error || rs.Status.Description != "the model failed" {
		t.Errorf("run status %+v", rs.Status)
	}
	second := byName(t, spans, "invoke_agent second")
	if second.Parent.SpanID() != rs.SpanContext.SpanID() || attrs(second)["gen_ai.request.model"].AsString() != "m2" {
		t.Errorf("the second agent's span is not its own child of the run: %+v", second.Parent)
	}
	cs := byName(t, spans, "chat gpt-4o-mini")
	if cs.Parent.SpanID() != rs.SpanContext.SpanID() || attrs(cs)["gen_ai.conversation.id"].AsString() != "t-1" {
		t.Errorf("chat parent %v, attrs %v", cs.Parent, cs.Attributes)
	}
	if cs.SpanKind != trace.SpanKindClient || rs.SpanKind != trace.SpanKindInternal {
		t.Errorf("kinds: chat %v, run %v", cs.SpanKind, rs.SpanKind)
	}
}

func TestAgentWithoutRunHasItsOwnSpan(t *testing.T) {
	exp := record(t, telemetry.Options{})
	_, a := telemetry.StartAgent(context.Background(), telemetry.AgentInfo{ChainID: "helper", RunID: "run-9", ParentRunID: "run-1"})
	a.End(telemetry.Usage{Input: 3, Output: 4}, "error", "timeout", "the run took longer than its timeout")
	s := byName(t, exp.GetSpans(), "invoke_agent helper")
	a2 := attrs(s)
	if a2["ruleagent.run.parent_id"].AsString() != "run-1" || a2["error.type"].AsString() != "timeout" ||
		a2["gen_ai.usage.output_tokens"].AsInt64() != 4 || s.Status.Code != codes.Error {
		t.Fatalf("span %v %+v", s.Attributes, s.Status)
	}
}

func TestChatSpan(t *testing.T) {
	exp := record(t, telemetry.Options{CaptureContent: true})
	ctx, ag := telemetry.StartAgent(context.Background(), telemetry.AgentInfo{ChainID: "c", ThreadID: "t-2", Scrubber: secrets{}})
	_, chat := telemetry.StartChat(ctx, telemetry.ChatInfo{Model: "gpt-4o", Provider: "openai", Address: "api.openai.com", Port: 443, Stream: true})
	chat.Retry(telemetry.Retry{Address: "api.openai.com", Model: "gpt-4o", Attempt: 1, Status: 429, ErrorType: "429", Delay: 250 * time.Millisecond})
	chat.Retry(telemetry.Retry{Address: "backup.local", Model: "llama", Attempt: 1, Status: 503, ErrorType: "503", Failover: true})
	chat.End(telemetry.ChatEnd{Model: "llama-3", Provider: "backup.local", FinishReason: "tool_calls", FirstChunk: 1500 * time.Millisecond,
		Usage: telemetry.Usage{Input: 100, Output: 20, CacheRead: 60, Reasoning: 5},
		Input: `[{"role":"user","parts":[{"type":"text","content":"key sk-secret"}]}]`, Output: `[]`})
	ag.End(telemetry.Usage{}, "success", "", "")
	s := byName(t, exp.GetSpans(), "chat gpt-4o")
	a := attrs(s)
	for k, v := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "backup.local", "gen_ai.request.model": "gpt-4o",
		"gen_ai.response.model": "llama-3", "gen_ai.request.stream": true, "server.address": "api.openai.com", "server.port": int64(443),
		"gen_ai.response.time_to_first_chunk": 1.5, "gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(20),
		"gen_ai.usage.cache_read.input_tokens": int64(60), "gen_ai.usage.reasoning.output_tokens": int64(5), "gen_ai.conversation.id": "t-2",
		"gen_ai.input.messages": `[{"role":"user","parts":[{"type":"text","content":"key [REDACTED]"}]}]`} {
		if got := a[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if fr := a["gen_ai.response.finish_reasons"].AsStringSlice(); len(fr) != 1 || fr[0] != "tool_calls" {
		t.Errorf("finish reasons %v", fr)
	}
	if len(s.Events) != 2 || s.Events[0].Name != telemetry.EventRetry || s.Events[1].Name != telemetry.EventFailover {
		t.Fatalf("events %+v", s.Events)
	}
	ev := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Events[0].Attributes {
		ev[kv.Key] = kv.Value
	}
	if ev["http.response.status_code"].AsInt64() != 429 || ev["ruleagent.llm.retry_delay_ms"].AsInt64() != 250 || ev["error.type"].AsString() != "429" {
		t.Errorf("retry event %v", s.Events[0].Attributes)
	}
}

func TestChatFailure(t *testing.T) {
	exp := record(t, telemetry.Options{})
	ctx, _ := telemetry.StartAgent(context.Background(), telemetry.AgentInfo{Scrubber: secrets{}})
	_, chat := telemetry.StartChat(ctx, telemetry.ChatInfo{Model: "m"})
	chat.End(telemetry.ChatEnd{ErrorType: "401", Message: "LLM answered 401: bad key sk-secret", Input: "[]"})
	s := byName(t, exp.GetSpans(), "chat m")
	a := attrs(s)
	if a["error.type"].AsString() != "401" || s.Status.Code != codes.Error || s.Status.Description != "LLM answered 401: bad key [REDACTED]" {
		t.Fatalf("attrs %v status %+v", s.Attributes, s.Status)
	}
	if _, ok := a["gen_ai.usage.input_tokens"]; ok {
		t.Error("a failed call reports usage")
	}
	if _, ok := a["gen_ai.input.messages"]; !ok {
		t.Error("the content was not recorded although its capture is on")
	}
}

func TestToolSpan(t *testing.T) {
	exp := record(t, telemetry.Options{})
	_, tool := telemetry.StartTool(context.Background(), telemetry.ToolInfo{Name: "bash", CallID: "call_7", Kind: "builtin"})
	if tool.CaptureContent() {
		t.Fatal("content captured without the operator's opt-in")
	}
	tool.End(telemetry.ToolEnd{IsError: true, ErrorType: "permission_denied", Message: "Error (permission_denied): denied", Truncated: true})
	s := byName(t, exp.GetSpans(), "execute_tool bash")
	a := attrs(s)
	for k, v := range map[string]any{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash", "gen_ai.tool.call.id": "call_7",
		"gen_ai.tool.type": "function", "ruleagent.tool.type": "builtin", "ruleagent.tool.outcome": "error",
		"error.type": "permission_denied", "ruleagent.tool.truncated": true} {
		if got := a[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	if s.Status.Code != codes.Error {
		t.Errorf("status %+v", s.Status)
	}
}

func TestNodeSteps(t *testing.T) {
	exp := record(t, telemetry.Options{})
	// A chain run under no span records no steps.
	if _, n := telemetry.StartNode(context.Background(), telemetry.NodeInfo{NodeID: "lone"}); n.Active() {
		t.Fatal("a node step without a chain run span")
	}
	ctx, run := telemetry.StartRun(context.Background(), telemetry.RunInfo{ChainID: "flow", RunID: "r"})
	// RuleGo hands each node the context of the node before it.
	c1, n1 := telemetry.StartNode(ctx, telemetry.NodeInfo{ChainID: "flow", NodeID: "s1", Type: "jsTransform", Name: "Prepare"})
	c2, n2 := telemetry.StartNode(c1, telemetry.NodeInfo{ChainID: "flow", NodeID: "s2", Type: "ai/agent"})
	_, chat := telemetry.StartChat(c2, telemetry.ChatInfo{Model: "m"})
	chat.End(telemetry.ChatEnd{})
	n1.End("Success", nil, nil)
	n2.End("Failure", errors.New("failed: token sk-secret"), secrets{})
	run.End(telemetry.RunEnd{Outcome: "error"})
	spans := exp.GetSpans()
	rs, s1, s2 := byName(t, spans, "invoke_agent flow"), byName(t, spans, "node s1"), byName(t, spans, "node s2")
	if s1.Parent.SpanID() != rs.SpanContext.SpanID() || s2.Parent.SpanID() != rs.SpanContext.SpanID() {
		t.Fatal("node steps are not siblings under the run")
	}
	if byName(t, spans, "chat m").Parent.SpanID() != s2.SpanContext.SpanID() {
		t.Fatal("the agent node's LLM call is not inside its step")
	}
	a1, a2 := attrs(s1), attrs(s2)
	if a1["ruleagent.node.type"].AsString() != "jsTransform" || a1["ruleagent.node.name"].AsString() != "Prepare" ||
		a1["ruleagent.node.relation"].AsString() != "Success" || a1["ruleagent.chain.id"].AsString() != "flow" {
		t.Errorf("s1 %v", s1.Attributes)
	}
	if a2["ruleagent.node.relation"].AsString() != "Failure" || s2.Status.Description != "failed: token [REDACTED]" {
		t.Errorf("s2 %v %+v", s2.Attributes, s2.Status)
	}
	// Under a tool call (a rulechain tool), the call is the steps' parent.
	tctx, tool := telemetry.StartTool(c2, telemetry.ToolInfo{Name: "lookup"})
	_, n3 := telemetry.StartNode(telemetry.NodesUnder(tctx), telemetry.NodeInfo{NodeID: "q"})
	n3.End("Success", nil, nil)
	tool.End(telemetry.ToolEnd{})
	spans = exp.GetSpans()
	if byName(t, spans, "node q").Parent.SpanID() != byName(t, spans, "execute_tool lookup").SpanContext.SpanID() {
		t.Fatal("a chain tool's node step is not under its call")
	}
}

func TestWithSpanOf(t *testing.T) {
	record(t, telemetry.Options{})
	runCtx, run := telemetry.StartRun(context.Background(), telemetry.RunInfo{RunID: "r"})
	nodeCtx, node := telemetry.StartNode(runCtx, telemetry.NodeInfo{NodeID: "n"})
	got := telemetry.WithSpanOf(runCtx, nodeCtx)
	if !trace.SpanContextFromContext(got).Equal(trace.SpanContextFromContext(nodeCtx)) {
		t.Fatal("the node's span is not current")
	}
	if telemetry.WithSpanOf(runCtx, runCtx) != runCtx {
		t.Fatal("the same span made a new context")
	}
	node.End("Success", nil, nil)
	run.End(telemetry.RunEnd{})
}

// secrets redacts the one secret of these tests.
type secrets struct{}

func (secrets) Scrub(s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED]") }

// BenchmarkOff is every check a 4-turn, 3-tool run with two node steps
// makes with tracing off: the run, its agent, four LLM calls, three tool
// calls, two node steps, and the trace context of its request.
func BenchmarkOff(b *testing.B) {
	telemetry.Install(nil, telemetry.Options{})
	ctx := context.Background()
	h := http.Header{"Traceparent": {callerTraceparent}}
	b.ReportAllocs()
	for b.Loop() {
		c := telemetry.FromHeaders(ctx, h)
		c, run := telemetry.StartRun(c, telemetry.RunInfo{ChainID: "c", RunID: "r"})
		for range 2 {
			_, node := telemetry.StartNode(c, telemetry.NodeInfo{NodeID: "n"})
			node.End("Success", nil, nil)
		}
		c, agent := telemetry.StartAgent(c, telemetry.AgentInfo{Name: "a"})
		for range 4 {
			_, chat := telemetry.StartChat(c, telemetry.ChatInfo{Model: "m"})
			chat.End(telemetry.ChatEnd{})
		}
		for range 3 {
			_, tool := telemetry.StartTool(c, telemetry.ToolInfo{Name: "t"})
			tool.End(telemetry.ToolEnd{})
		}
		agent.End(telemetry.Usage{}, "success", "", "")
		run.End(telemetry.RunEnd{})
	}
}
