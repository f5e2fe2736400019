package server

import (
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ruleagent/ruleagent/telemetry"
)

// TestResumedRunJoinsTheResumeRequestsTrace: a paused run goes on, after
// POST /api/v1/runs/{id}/resume or an AG-UI resume, under the trace
// context of the request that answered it (its traceparent header, or
// AG-UI's forwardedProps.ruleagent.traceparent, which wins): the resumed
// segment's run span is the child of the resume request's span (its HTTP
// server span, or forwardedProps' caller), not of the request that started
// the run.
func TestResumedRunJoinsTheResumeRequestsTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
	t.Cleanup(func() { telemetry.Install(nil, telemetry.Options{}) })
	e := newAPIEnv(t, Options{})
	const (
		startParent  = "00-11111111111111111111111111111111-1111111111111111-01"
		resumeTrace  = "22222222222222222222222222222222"
		resumeSpan   = "2222222222222222"
		resumeParent = "00-" + resumeTrace + "-" + resumeSpan + "-01"
	)
	resumedSpan := func(t *testing.T) tracetest.SpanStub {
		t.Helper()
		var runs []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if attrOf(s, "gen_ai.operation.name").AsString() == "invoke_agent" && attrOf(s, "ruleagent.run.source").Type() != 0 {
				runs = append(runs, s)
			}
		}
		if len(runs) != 1 {
			t.Fatalf("%d run spans in the resumed segment", len(runs))
		}
		return runs[0]
	}

	t.Run("run route", func(t *testing.T) {
		code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-trace-run"},
			"traceparent", startParent)
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
			t.Fatalf("run: %d %s", code, body)
		}
		exp.Reset()
		code, body, _ = e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": []any{map[string]any{
			"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}}, "traceparent", resumeParent)
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" {
			t.Fatalf("resume: %d %s", code, body)
		}
		// Under the resume request's server span, the traceparent's child.
		run := resumedSpan(t)
		req := tree{t: t, spans: exp.GetSpans()}.one("POST /api/v1/runs/{runId}/resume")
		if run.SpanContext.TraceID().String() != resumeTrace || run.Parent.SpanID() != req.SpanContext.SpanID() || req.Parent.SpanID().String() != resumeSpan {
			t.Errorf("resumed run in %s under %s, want %s under the request's span under %s", run.SpanContext.TraceID(), run.Parent.SpanID(), resumeTrace, resumeSpan)
		}
	})

	t.Run("agui", func(t *testing.T) {
		code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-trace-agui"},
			"traceparent", startParent)
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
			t.Fatalf("run: %d %s", code, body)
		}
		exp.Reset()
		code, body, _ = e.do("POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-trace-agui", "runId": "r-resumed",
			"messages": []any{}, "tools": []any{}, "context": []any{}, "state": map[string]any{},
			"forwardedProps": map[string]any{"ruleagent": map[string]any{"traceparent": resumeParent}},
			"resume":         []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}},
			"traceparent", startParent)
		if code != 200 {
			t.Fatalf("resume: %d %s", code, body)
		}
		run := resumedSpan(t)
		if run.SpanContext.TraceID().String() != resumeTrace || run.Parent.SpanID().String() != resumeSpan {
			t.Errorf("resumed run in %s under %s, want forwardedProps' %s under %s", run.SpanContext.TraceID(), run.Parent.SpanID(), resumeTrace, resumeSpan)
		}
	})
}
