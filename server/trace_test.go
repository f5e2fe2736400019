package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/telemetry"
)

const (
	promptTraced = "You are the traced agent."
	// The caller's span, as a W3C traceparent.
	callerTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan   = "00f067aa0ba902b7"
	callerParent = "00-" + callerTrace + "-" + callerSpan + "-01"
)

// traceEnv serves chains with tracing on, recording the spans in memory:
// "traced" prepares its input in a jsTransform node, then its agent calls
// the rulechain tool lookup and the sub-agent helper in one turn.
type traceEnv struct {
	base  string
	spans *tracetest.InMemoryExporter
}

func newTraceEnv(t *testing.T) *traceEnv {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	t.Cleanup(func() { telemetry.Install(nil, telemetry.Options{}) })
	llm := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptTraced), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if len(r.ToolResults()) > 0 {
				return llmtest.Reply("both answered")
			}
			return llmtest.Calls(llmtest.Call("lookup", `{"key":"A-1"}`), llmtest.Call("helper", `{"message":"help"}`))
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptHelper), Script: llmtest.Always(llmtest.Reply("The helper did its part."))},
	))
	agent := agentNode(promptTraced, map[string]any{"tools": []any{
		map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}},
		map[string]any{"type": "agent", "name": "helper", "targetId": "helper"},
	}})
	traced, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "traced", "name": "Traced"},
		"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{map[string]any{"fromId": "prep", "toId": "agent", "type": "Success"}},
			"nodes": []any{map[string]any{"id": "prep", "type": "jsTransform", "name": "Prepare", "configuration": map[string]any{
				"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}, agent}},
	})
	dir := t.TempDir()
	for id, dsl := range map[string]string{
		"traced": string(traced),
		"helper": chainDSL("helper", "Helper", map[string]any{"description": "Helps."}, agentNode(promptHelper, nil)),
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};`),
	} {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, errs := OpenStore(dir, NewConfig(map[string]string{"llm_url": llm.URL, "api_key": "sk-test", "model": "test-model"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	return &traceEnv{base: serveLoopback(t, Handler(Options{Store: store})), spans: exp}
}

func (e *traceEnv) post(t *testing.T, path, body string, hdr ...string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, b.String())
	}
	return []byte(b.String())
}

// tree indexes spans by name and by id.
type tree struct {
	t     *testing.T
	spans tracetest.SpanStubs
}

func (tr tree) one(name string) tracetest.SpanStub {
	tr.t.Helper()
	var found []tracetest.SpanStub
	for _, s := range tr.spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		var names []string
		for _, s := range tr.spans {
			names = append(names, s.Name)
		}
		tr.t.Fatalf("%d spans %q among %q", len(found), name, names)
	}
	return found[0]
}

// under checks that child's parent is parent.
func (tr tree) under(child, parent tracetest.SpanStub) {
	tr.t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		tr.t.Errorf("%s is not a child of %s", child.Name, parent.Name)
	}
}

func attrOf(s tracetest.SpanStub, k string) attribute.Value {
	for _, kv := range s.Attributes {
		if string(kv.Key) == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTraceOfARun: one trace per run, in the caller's trace: the run span
// is the child of the request's server span, which is the child of the
// traceparent the request came with; the chain's
// node steps are its children; the agent's LLM and tool calls are the
// children of its node's step; a rulechain tool's nodes are the children
// of its call, and a sub-agent's run is the child of its call, with its
// own nodes and LLM call inside.
func TestTraceOfARun(t *testing.T) {
	e := newTraceEnv(t)
	e.post(t, "/api/v1/chains/traced/run", `{"input":"go","threadId":"thread-9"}`, "traceparent", callerParent, "tracestate", "vendor=1")
	tr := tree{t: t, spans: e.spans.GetSpans()}

	// The request's server span is the caller's child (TestHTTPServerSpans).
	run := tr.one("invoke_agent Traced")
	srv := tr.one("POST /api/v1/chains/{id}/run")
	if run.SpanContext.TraceID().String() != callerTrace || run.Parent.SpanID() != srv.SpanContext.SpanID() || srv.Parent.SpanID().String() != callerSpan {
		t.Fatalf("run span in trace %s under %s, want the caller's %s under the request's span", run.SpanContext.TraceID(), run.Parent.SpanID(), callerTrace)
	}
	if run.SpanContext.TraceState().Get("vendor") != "1" {
		t.Errorf("tracestate lost: %v", run.SpanContext.TraceState())
	}
	for k, want := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "traced", "gen_ai.conversation.id": "thread-9",
		"ruleagent.run.source": "run", "ruleagent.run.outcome": "success", "gen_ai.request.model": "test-model", "gen_ai.provider.name": "127.0.0.1"} {
		if got := attrOf(run, k).AsInterface(); got != want {
			t.Errorf("run %s = %v, want %v", k, got, want)
		}
	}
	if in := attrOf(run, "gen_ai.usage.input_tokens").AsInt64(); in <= 0 {
		t.Errorf("run usage %d", in)
	}

	var steps, chats []tracetest.SpanStub
	for _, s := range tr.spans {
		switch {
		case strings.HasPrefix(s.Name, "node "):
			steps = append(steps, s)
		case strings.HasPrefix(s.Name, "chat "):
			chats = append(chats, s)
		}
	}
	if len(steps) != 4 || len(chats) != 3 {
		t.Fatalf("%d node steps (want prep and agent, lookup's js, helper's agent), %d chats (want 2 + the helper's)", len(steps), len(chats))
	}
	var prep, agentStep, lookupStep, helperStep tracetest.SpanStub
	for _, s := range steps {
		switch chain, node := attrOf(s, "ruleagent.chain.id").AsString(), attrOf(s, "ruleagent.node.id").AsString(); {
		case chain == "traced" && node == "prep":
			prep = s
		case chain == "traced" && node == "agent":
			agentStep = s
		case chain == "lookup":
			lookupStep = s
		case chain == "helper":
			helperStep = s
		}
	}
	tr.under(prep, run)
	tr.under(agentStep, run)
	if attrOf(prep, "ruleagent.node.type").AsString() != "jsTransform" || attrOf(prep, "ruleagent.node.name").AsString() != "Prepare" ||
		attrOf(prep, "ruleagent.node.relation").AsString() != "Success" || attrOf(agentStep, "ruleagent.node.type").AsString() != "ai/agent" {
		t.Errorf("steps: %v / %v", prep.Attributes, agentStep.Attributes)
	}

	lookup, helper := tr.one("execute_tool lookup"), tr.one("execute_tool helper")
	tr.under(lookup, agentStep)
	tr.under(helper, agentStep)
	tr.under(lookupStep, lookup)
	sub := tr.one("invoke_agent Helper")
	tr.under(sub, helper)
	tr.under(helperStep, sub)
	if attrOf(sub, "ruleagent.run.parent_id").AsString() == "" || attrOf(sub, "ruleagent.run.source").AsString() != "subagent" ||
		attrOf(sub, "gen_ai.usage.output_tokens").AsInt64() <= 0 {
		t.Errorf("sub-agent run: %v", sub.Attributes)
	}
	for _, c := range chats {
		if c.Parent.SpanID() == helperStep.SpanContext.SpanID() {
			continue
		}
		tr.under(c, agentStep)
	}
	if attrOf(helper, "ruleagent.tool.type").AsString() != "agent" || attrOf(lookup, "ruleagent.tool.type").AsString() != "rulechain" {
		t.Errorf("tool types: %v / %v", helper.Attributes, lookup.Attributes)
	}
}

// TestTraceContextFromAGUIAndMCP: an AG-UI client passes its trace
// context in forwardedProps.ruleagent.traceparent (it wins over a header a
// proxy may have set), an MCP client in the request's _meta.
func TestTraceContextFromAGUIAndMCP(t *testing.T) {
	e := newTraceEnv(t)
	other := "00-11111111111111111111111111111111-2222222222222222-01"
	e.post(t, "/api/v1/chains/helper/agui", `{"threadId":"t-agui","runId":"run-agui-2","messages":[{"id":"m1","role":"user","content":"hi"}],`+
		`"tools":[],"context":[],"state":{},"forwardedProps":{"ruleagent":{"traceparent":"`+callerParent+`"}}}`, "traceparent", other)
	run := tree{t: t, spans: e.spans.GetSpans()}.one("invoke_agent Helper")
	if run.SpanContext.TraceID().String() != callerTrace || run.Parent.SpanID().String() != callerSpan {
		t.Errorf("AG-UI run in %s under %s, want forwardedProps' %s under %s", run.SpanContext.TraceID(), run.Parent.SpanID(), callerTrace, callerSpan)
	}
	if attrOf(run, "ruleagent.run.source").AsString() != "agui" || attrOf(run, "ruleagent.run.id").AsString() != "run-agui-2" {
		t.Errorf("AG-UI run: %v", run.Attributes)
	}

	e.spans.Reset()
	mcpTrace := "00-abcdefabcdefabcdefabcdefabcdefab-1234567812345678-01"
	if r := toolsCall(t, e.base+"/mcp", "helper", map[string]any{"arguments": map[string]any{"message": "hi"},
		"_meta": map[string]any{"traceparent": mcpTrace}}, nil); r.result["isError"] == true || r.text() == "" {
		t.Fatalf("tools/call: %+v", r)
	}
	run = tree{t: t, spans: e.spans.GetSpans()}.one("invoke_agent Helper")
	if run.SpanContext.TraceID() != mustTraceID(t, "abcdefabcdefabcdefabcdefabcdefab") || run.Parent.SpanID().String() != "1234567812345678" {
		t.Errorf("MCP run in %s under %s", run.SpanContext.TraceID(), run.Parent.SpanID())
	}
	if attrOf(run, "ruleagent.run.source").AsString() != "mcp" {
		t.Errorf("MCP run: %v", run.Attributes)
	}
}

func mustTraceID(t *testing.T, h string) trace.TraceID {
	id, err := trace.TraceIDFromHex(h)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
