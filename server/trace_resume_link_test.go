package server

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/telemetry"
)

// traceSpans installs a tracer provider whose spans are kept in memory
// for the test.
func traceSpans(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	t.Cleanup(func() { telemetry.Install(nil, telemetry.Options{}) })
	return exp
}

// runSegments are the run spans (invoke_agent of a run the server
// started, not a sub-agent's) of run runID, in the order they ended.
func runSegments(exp *tracetest.InMemoryExporter, runID string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if attrOf(s, "gen_ai.operation.name").AsString() == "invoke_agent" && attrOf(s, "ruleagent.run.id").AsString() == runID &&
			attrOf(s, "ruleagent.run.source").AsString() != "subagent" {
			out = append(out, s)
		}
	}
	return out
}

// continues fails the test unless run segment next is the child of the
// paused segment's span, in its trace (the whole run is one trace).
func continues(t *testing.T, paused, next tracetest.SpanStub) {
	t.Helper()
	if attrOf(paused, "ruleagent.run.outcome").AsString() != "interrupt" {
		t.Fatalf("the first segment's outcome: %v", attrOf(paused, "ruleagent.run.outcome"))
	}
	if next.SpanContext.TraceID() != paused.SpanContext.TraceID() || next.Parent.SpanID() != paused.SpanContext.SpanID() {
		t.Errorf("the resumed segment is in trace %s under %s; want the paused segment's trace %s under its span %s",
			next.SpanContext.TraceID(), next.Parent.SpanID(), paused.SpanContext.TraceID(), paused.SpanContext.SpanID())
	}
}

// TestResumedRunWithoutTraceContextContinuesThePausedTrace: a resume that
// brings no trace context goes on in the paused segment's trace, the child
// of its run span (saved in the checkpoint), and links to the request that
// answered (a trace of its own). The checkpoint keeps the span context.
func TestResumedRunWithoutTraceContextContinuesThePausedTrace(t *testing.T) {
	exp := traceSpans(t)
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "run-tl"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	_, state, err := e.store.paused(t.Context(), "run-tl")
	if err != nil {
		t.Fatal(err)
	}
	segs := runSegments(exp, "run-tl")
	if len(segs) != 1 || state.Traceparent != "00-"+segs[0].SpanContext.TraceID().String()+"-"+segs[0].SpanContext.SpanID().String()+"-01" {
		t.Fatalf("the checkpoint's traceparent %q, the paused segments %d", state.Traceparent, len(segs))
	}
	if ans = resumeRun(t, e, "run-tl", ans.Interrupts[0].ID, map[string]any{"approved": true}); ans.Outcome != "success" {
		t.Fatalf("resume: %+v", ans)
	}
	segs = runSegments(exp, "run-tl")
	if len(segs) != 2 {
		t.Fatalf("%d run segments", len(segs))
	}
	continues(t, segs[0], segs[1])
	var req tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "POST /api/v1/runs/{runId}/resume" {
			req = s
		}
	}
	if len(segs[1].Links) != 1 || segs[1].Links[0].SpanContext.SpanID() != req.SpanContext.SpanID() || req.SpanContext.TraceID() == segs[1].SpanContext.TraceID() {
		t.Errorf("the resumed segment's links %+v; want the resume request's span %s, in a trace of its own", segs[1].Links, req.SpanContext.SpanID())
	}
}

// TestResumedRunLinksToThePausedSpan: a resume that brings trace context
// (traceparent header, AG-UI forwardedProps) goes on under it, and its run
// span links to the paused segment's.
func TestResumedRunLinksToThePausedSpan(t *testing.T) {
	exp := traceSpans(t)
	e := newAPIEnv(t, Options{})
	const resumeParent = "00-22222222222222222222222222222222-2222222222222222-01"
	for _, via := range []string{"run", "agui"} {
		t.Run(via, func(t *testing.T) {
			runID, thread := "run-link-"+via, "t-link-"+via
			code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": thread, "runId": runID})
			var ans runAnswer
			if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
				t.Fatalf("run: %d %s", code, body)
			}
			entry := []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}
			if via == "run" {
				code, body, _ = e.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": entry}, "traceparent", resumeParent)
			} else {
				code, body, _ = e.do("POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": thread, "runId": "r-" + via,
					"messages": []any{}, "tools": []any{}, "context": []any{}, "state": map[string]any{},
					"forwardedProps": map[string]any{"ruleagent": map[string]any{"traceparent": resumeParent}}, "resume": entry})
			}
			if code != 200 {
				t.Fatalf("resume: %d %s", code, body)
			}
			segs := runSegments(exp, runID)
			if len(segs) != 2 {
				t.Fatalf("%d run segments", len(segs))
			}
			paused, next := segs[0], segs[1]
			if next.SpanContext.TraceID().String() != "22222222222222222222222222222222" {
				t.Errorf("the resumed segment is in trace %s, not the resume request's", next.SpanContext.TraceID())
			}
			if len(next.Links) != 1 || !next.Links[0].SpanContext.Equal(paused.SpanContext.WithRemote(true)) {
				t.Errorf("the resumed segment's links %+v; want the paused segment's span %s", next.Links, paused.SpanContext.SpanID())
			}
		})
	}
}

// TestMCPApprovalRetryContinuesThePausedTrace: an agent's approval asked of
// a 2026-07-28 client pauses the run; the retry with requestState, without
// trace context, on another replica sharing the checkpoint store, goes on
// in the paused segment's trace.
func TestMCPApprovalRetryContinuesThePausedTrace(t *testing.T) {
	exp := traceSpans(t)
	e := newMCPEnvWith(t, map[string][]byte{"careful.json": []byte(carefulDSL)})
	stores := sharedBolt(t)
	open := func(replica string) string {
		s, errs := OpenStoreWith(e.dir, NewConfig(e.globals(t)), StoreOptions{Checkpoints: stores(replica), Replica: replica})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t.Cleanup(s.Close)
		return serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	}
	one, two := open("one"), open("two")
	args := map[string]any{"message": "What do the notes say?"}
	first := toolsCall(t, one, "careful", map[string]any{"arguments": args}, elicitCaps)
	var key string
	for k := range first.inputRequests(t) {
		key = k
	}
	retry := map[string]any{"arguments": args, "requestState": first.result["requestState"], "inputResponses": map[string]any{key: accept(map[string]any{})}}
	if done := toolsCall(t, two, "careful", retry, elicitCaps); done.text() != readerAnswer {
		t.Fatalf("the retry: %v %v", done.result, done.err)
	}
	mcpSegmentsContinue(t, exp)
}

// TestExpiryContinuationContinuesThePausedTrace: a run whose interrupt
// expired goes on without a client, in the paused segment's trace.
func TestExpiryContinuationContinuesThePausedTrace(t *testing.T) {
	exp := traceSpans(t)
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "run-exp"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	ctx := t.Context()
	cp, err := e.store.checkpoints.Load(ctx, "run-exp")
	if err != nil {
		t.Fatal(err)
	}
	state, _ := checkpoint.Decode(cp.Data)
	state.Pending[0].Expires = time.Now().Add(-time.Second)
	if cp.Data, err = checkpoint.Encode(state); err != nil {
		t.Fatal(err)
	}
	if err := e.store.checkpoints.Save(ctx, cp); err != nil {
		t.Fatal(err)
	}
	e.store.expire("run-exp")
	deadline := time.Now().Add(10 * time.Second)
	for len(runSegments(exp, "run-exp")) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not go on after its interrupt expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	segs := runSegments(exp, "run-exp")
	continues(t, segs[0], segs[1])
	if len(segs[1].Links) != 0 || !strings.Contains(state.Traceparent, segs[0].SpanContext.SpanID().String()) {
		t.Errorf("links %+v (no request answered), the checkpoint's traceparent %q", segs[1].Links, state.Traceparent)
	}
}

// TestMCPInputRetryContinuesThePausedTrace: a call whose chain node asks
// its 2026-07-28 client pauses as an input pause; the retry with
// requestState, without trace context, on another server sharing the
// checkpoint store, goes on in the paused segment's trace.
func TestMCPInputRetryContinuesThePausedTrace(t *testing.T) {
	exp := traceSpans(t)
	cps := checkpoint.NewMemory(nil)
	_, a := greetReplica(t, cps, "a")
	_, b := greetReplica(t, cps, "b")
	first := toolsCall(t, a, "greet", nil, elicitCaps)
	state, _ := first.result["requestState"].(string)
	answer := map[string]any{"requestState": state, "inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}}
	if done := toolsCall(t, b, "greet", answer, elicitCaps); done.text() != "Hello, Ada!" {
		t.Fatalf("the retry on the other replica: %v %v", done.result, done.err)
	}
	mcpSegmentsContinue(t, exp)
}

// mcpSegmentsContinue checks that the two run segments of an MCP call
// (before and after its pause) are one trace: the second continues the
// first.
func mcpSegmentsContinue(t *testing.T, exp *tracetest.InMemoryExporter) {
	t.Helper()
	var segs []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if attrOf(s, "gen_ai.operation.name").AsString() == "invoke_agent" && attrOf(s, "ruleagent.run.source").AsString() == "mcp" {
			segs = append(segs, s)
		}
	}
	if len(segs) != 2 {
		t.Fatalf("%d run segments", len(segs))
	}
	continues(t, segs[0], segs[1])
}
