package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/ruleagent/ruleagent/telemetry"
)

// TestResumeUnder: a resumed segment's span is the child of the paused
// segment's saved span (its tracestate kept) when the resume brings no
// trace context, and of the caller's span (a Go caller's here), linking
// to the paused one, when it does; a malformed or missing saved
// traceparent changes nothing.
func TestResumeUnder(t *testing.T) {
	exp := record(t, telemetry.Options{})
	_, paused := telemetry.StartRun(context.Background(), telemetry.RunInfo{ChainID: "c", RunID: "r"})
	tp, ts := paused.Traceparent()
	paused.End(telemetry.RunEnd{Outcome: "interrupt"})
	pausedSC := exp.GetSpans()[0].SpanContext
	if tp != "00-"+pausedSC.TraceID().String()+"-"+pausedSC.SpanID().String()+"-01" || ts != "" {
		t.Fatalf("traceparent %q, tracestate %q", tp, ts)
	}

	ctx, links := telemetry.ResumeUnder(context.Background(), tp, "k=v")
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID() != pausedSC.TraceID() || sc.SpanID() != pausedSC.SpanID() || sc.TraceState().Get("k") != "v" || len(links) != 0 {
		t.Errorf("no caller: parent %v, links %v", sc, links)
	}

	caller := trace.ContextWithSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled}))
	ctx, links = telemetry.ResumeUnder(caller, tp, "")
	if trace.SpanContextFromContext(ctx).TraceID() != (trace.TraceID{1}) || len(links) != 1 || links[0].SpanContext.SpanID() != pausedSC.SpanID() {
		t.Errorf("a Go caller's span: parent %v, links %v", trace.SpanContextFromContext(ctx), links)
	}

	for _, saved := range []string{"", "00-zz-00f067aa0ba902b7-01"} {
		if ctx, links := telemetry.ResumeUnder(context.Background(), saved, ""); trace.SpanContextFromContext(ctx).IsValid() || links != nil {
			t.Errorf("saved %q: a parent or links came of it", saved)
		}
	}
	if tp, _ := (telemetry.Run{}).Traceparent(); tp != "" {
		t.Errorf("the zero Run's traceparent %q", tp)
	}
}
