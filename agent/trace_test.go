package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

func recordSpans(t *testing.T, content bool) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	telemetry.Install(tp, telemetry.Options{CaptureContent: content})
	t.Cleanup(func() { telemetry.Install(nil, telemetry.Options{}) })
	return exp
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func spansNamed(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceOfARun: a run with a retried LLM call, a tool call and a final
// answer is one invoke_agent span holding two chat spans and an
// execute_tool span, with the GenAI attributes of each.
func TestTraceOfARun(t *testing.T) {
	exp := recordSpans(t, true)
	h := newHarness(t, llmtest.Flaky(1, 429, llmtest.Sequence(
		llmtest.Response{ToolCalls: []llmtest.ToolCall{{ID: "call_add", Name: "add", Arguments: `{"a":2,"b":40}`}},
			Usage: &llmtest.Usage{PromptTokens: 50, CompletionTokens: 10, CachedTokens: 30, ReasoningTokens: 4}},
		llmtest.Response{Text: "It is 42.", Usage: &llmtest.Usage{PromptTokens: 70, CompletionTokens: 5}})))
	h.tools = []string{"add"}
	h.llm.MaxRetries = 2
	sc := scrub.New()
	sc.AddSecrets("hunter2-secret")
	out, err := h.agent().Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "2+40? my password is hunter2-secret"}},
		SystemPrompt: "You add.", Stream: true, ThreadID: "thread-7", Point: pointFor("adder"), Scrubber: sc}, &events.Recorder{})
	if err != nil || out.Content != "It is 42." {
		t.Fatalf("run: %v %v", out, err)
	}
	spans := exp.GetSpans()
	runs := spansNamed(spans, "invoke_agent adder-node")
	chats := spansNamed(spans, "chat test-model")
	tools := spansNamed(spans, "execute_tool add")
	if len(runs) != 1 || len(chats) != 2 || len(tools) != 1 {
		t.Fatalf("spans: %d runs, %d chats, %d tools", len(runs), len(chats), len(tools))
	}
	run := runs[0]
	for _, s := range append(chats, tools...) {
		if s.Parent.SpanID() != run.SpanContext.SpanID() || s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("%s is not a child of the run", s.Name)
		}
	}
	ra := spanAttrs(run)
	for k, v := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "adder", "ruleagent.run.id": out.RunID,
		"gen_ai.conversation.id": "thread-7", "gen_ai.request.model": "test-model", "gen_ai.provider.name": "127.0.0.1",
		"gen_ai.usage.input_tokens": int64(120), "gen_ai.usage.output_tokens": int64(15), "gen_ai.usage.cache_read.input_tokens": int64(30),
		"gen_ai.usage.reasoning.output_tokens": int64(4), "ruleagent.run.outcome": "success"} {
		if got := ra[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("run %s = %v, want %v", k, got, v)
		}
	}
	first, second := chats[0], chats[1]
	if first.StartTime.After(second.StartTime) {
		first, second = second, first
	}
	fa := spanAttrs(first)
	for k, v := range map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model", "gen_ai.response.model": "test-model",
		"gen_ai.request.stream": true, "server.address": "127.0.0.1", "gen_ai.conversation.id": "thread-7",
		"gen_ai.usage.input_tokens": int64(50), "gen_ai.usage.output_tokens": int64(10),
		"gen_ai.usage.cache_read.input_tokens": int64(30), "gen_ai.usage.reasoning.output_tokens": int64(4)} {
		if got := fa[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("first chat %s = %v, want %v", k, got, v)
		}
	}
	if fr := fa["gen_ai.response.finish_reasons"].AsStringSlice(); len(fr) != 1 || fr[0] != "tool_calls" {
		t.Errorf("finish reasons %v", fr)
	}
	if ttfc := fa["gen_ai.response.time_to_first_chunk"].AsFloat64(); ttfc <= 0 || ttfc > 30 {
		t.Errorf("time to first chunk %v", ttfc)
	}
	if len(first.Events) != 1 || first.Events[0].Name != telemetry.EventRetry {
		t.Fatalf("first chat's events %+v, want one retry", first.Events)
	}
	ev := map[attribute.Key]attribute.Value{}
	for _, kv := range first.Events[0].Attributes {
		ev[kv.Key] = kv.Value
	}
	if ev["http.response.status_code"].AsInt64() != 429 || ev["error.type"].AsString() != "429" || ev["ruleagent.llm.attempt"].AsInt64() != 1 {
		t.Errorf("retry event %v", first.Events[0].Attributes)
	}
	// Content, opted in: scrubbed, in the conventions' message schema.
	in := fa["gen_ai.input.messages"].AsString()
	if !strings.Contains(in, `{"role":"system","parts":[{"type":"text","content":"You add."}]}`) ||
		strings.Contains(in, "hunter2-secret") || !strings.Contains(in, "[REDACTED]") {
		t.Errorf("input messages %s", in)
	}
	if o := fa["gen_ai.output.messages"].AsString(); !strings.Contains(o, `"type":"tool_call","id":"call_add","name":"add","arguments":{"a":2,"b":40}`) ||
		!strings.Contains(o, `"finish_reason":"tool_calls"`) {
		t.Errorf("output messages %s", o)
	}
	if in2 := spanAttrs(second)["gen_ai.input.messages"].AsString(); !strings.Contains(in2, `{"type":"tool_call_response","id":"call_add","result":"42"}`) {
		t.Errorf("second input %s", in2)
	}
	ta := spanAttrs(tools[0])
	for k, v := range map[string]any{"gen_ai.tool.name": "add", "gen_ai.tool.call.id": "call_add", "gen_ai.tool.type": "function",
		"ruleagent.tool.type": "builtin", "ruleagent.tool.outcome": "success", "gen_ai.tool.call.arguments": `{"a":2,"b":40}`,
		"gen_ai.tool.call.result": "42"} {
		if got := ta[attribute.Key(k)].AsInterface(); got != v {
			t.Errorf("tool %s = %v, want %v", k, got, v)
		}
	}
}

// TestTraceWithoutContent: by default no message, argument or result
// reaches a span.
func TestTraceWithoutContent(t *testing.T) {
	exp := recordSpans(t, false)
	h := newHarness(t, llmtest.Sequence(
		llmtest.Response{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}}},
		llmtest.Reply("3")))
	h.tools = []string{"add"}
	if _, _, err := h.run(context.Background(), "1+2"); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			switch kv.Key {
			case "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result":
				t.Errorf("%s records %s without the operator's opt-in", s.Name, kv.Key)
			}
		}
	}
}

// TestTraceOfAFailover: the failover is an event of the call, whose
// provider and model are then the backup's.
func TestTraceOfAFailover(t *testing.T) {
	exp := recordSpans(t, false)
	primary := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: 401, ErrorMessage: "bad key"}))
	backup := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("from the backup")))
	h := newHarness(t, llmtest.Always(llmtest.Reply("unused")))
	h.llm = LLMConfig{Endpoints: []Endpoint{{URL: primary.URL, Model: "m1"}, {URL: backup.URL, Model: "m2"}}, RetryBackoff: time.Millisecond}
	if _, _, err := h.run(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	chats := spansNamed(exp.GetSpans(), "chat m1")
	if len(chats) != 1 {
		t.Fatalf("spans %v", exp.GetSpans())
	}
	a := spanAttrs(chats[0])
	if a["gen_ai.request.model"].AsString() != "m1" || a["gen_ai.response.model"].AsString() != "m2" {
		t.Errorf("models %v", chats[0].Attributes)
	}
	if len(chats[0].Events) != 1 || chats[0].Events[0].Name != telemetry.EventFailover {
		t.Fatalf("events %+v", chats[0].Events)
	}
}

// TestTraceOfAFailedRun: the run and the call that failed it carry
// error.type and a scrubbed message.
func TestTraceOfAFailedRun(t *testing.T) {
	exp := recordSpans(t, false)
	h := newHarness(t, llmtest.Always(llmtest.Response{Status: 400, ErrorMessage: "no such model; key sk-proj-abcdefghijklmnopqrstuvwxyz123456"}))
	_, err := h.agent().Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}, Stream: true,
		Scrubber: scrub.New()}, &events.Recorder{})
	if err == nil {
		t.Fatal("the run succeeded")
	}
	spans := exp.GetSpans()
	chat, run := spansNamed(spans, "chat test-model"), spansNamed(spans, "invoke_agent")
	if len(chat) != 1 || len(run) != 1 {
		t.Fatalf("spans %v", spans)
	}
	if spanAttrs(chat[0])["error.type"].AsString() != "400" || spanAttrs(run[0])["error.type"].AsString() != CodeLLM {
		t.Errorf("error types: chat %v, run %v", chat[0].Attributes, run[0].Attributes)
	}
	if d := chat[0].Status.Description; !strings.Contains(d, "no such model") || strings.Contains(d, "sk-proj-abcdefghij") {
		t.Errorf("chat status %q", d)
	}
}

func pointFor(chain string) aspects.Point {
	return aspects.Point{ChainID: chain, NodeID: "n1", NodeName: chain + "-node"}
}

func TestGenAIProviderAndAddress(t *testing.T) {
	for raw, want := range map[string]struct {
		host, provider string
		port           int
	}{
		"https://api.openai.com/v1":                               {"api.openai.com", "openai", 443},
		"https://my-res.openai.azure.com/openai/deployments/x":    {"my-res.openai.azure.com", "azure.ai.openai", 443},
		"https://api.deepseek.com":                                {"api.deepseek.com", "deepseek", 443},
		"https://generativelanguage.googleapis.com/v1beta/openai": {"generativelanguage.googleapis.com", "gcp.gemini", 443},
		"http://127.0.0.1:11434/v1":                               {"127.0.0.1", "127.0.0.1", 11434},
		"http://localhost/v1":                                     {"localhost", "localhost", 80},
		"openrouter.ai:443":                                       {"openrouter.ai", "openrouter.ai", 443},
	} {
		host, port := hostPort(raw)
		if host != want.host || port != want.port || genAIProvider(host) != want.provider {
			t.Errorf("%s: %s:%d %s, want %+v", raw, host, port, genAIProvider(host), want)
		}
	}
}

// TestLLMRequestsCarryTheChatSpansTraceparent: with tracing on, every
// request to the LLM (the retried one too) carries the traceparent of its
// chat span, and no baggage; with tracing off, none carries trace headers,
// even under a caller's span context.
func TestLLMRequestsCarryTheChatSpansTraceparent(t *testing.T) {
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 2},
		TraceFlags: trace.FlagsSampled, TraceState: mustTraceState(t, "vendor=on")})
	member, _ := baggage.NewMember("user", "alice")
	bag, _ := baggage.New(member)
	ctxOf := func() context.Context {
		return baggage.ContextWithBaggage(trace.ContextWithRemoteSpanContext(context.Background(), caller), bag)
	}
	run := func(t *testing.T) *harness {
		h := newHarness(t, llmtest.Flaky(1, 503, llmtest.Always(llmtest.Response{Text: "hi"})))
		h.llm.MaxRetries = 2
		if _, err := h.agent().Run(ctxOf(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}},
			Stream: true, Point: pointFor("c")}, &events.Recorder{}); err != nil {
			t.Fatal(err)
		}
		return h
	}
	t.Run("on", func(t *testing.T) {
		exp := recordSpans(t, false)
		h := run(t)
		chats := spansNamed(exp.GetSpans(), "chat test-model")
		reqs := h.srv.Requests()
		if len(chats) != 1 || len(reqs) != 2 {
			t.Fatalf("%d chat spans, %d requests", len(chats), len(reqs))
		}
		sc := chats[0].SpanContext
		if sc.TraceID() != caller.TraceID() {
			t.Fatalf("chat span not in the caller's trace")
		}
		want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
		for i, r := range reqs {
			if got := r.Header.Get("traceparent"); got != want {
				t.Errorf("request %d: traceparent %q, want %q", i, got, want)
			}
			if got := r.Header.Get("tracestate"); got != "vendor=on" {
				t.Errorf("request %d: tracestate %q", i, got)
			}
			if got := r.Header.Get("baggage"); got != "" {
				t.Errorf("request %d: baggage %q passed on", i, got)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		telemetry.Install(nil, telemetry.Options{})
		h := run(t)
		for i, r := range h.srv.Requests() {
			for _, k := range []string{"traceparent", "tracestate", "baggage"} {
				if got := r.Header.Get(k); got != "" {
					t.Errorf("request %d: %s %q with tracing off", i, k, got)
				}
			}
		}
	})
}

func mustTraceState(t *testing.T, s string) trace.TraceState {
	t.Helper()
	ts, err := trace.ParseTraceState(s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}
