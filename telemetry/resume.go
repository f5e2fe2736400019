package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A paused run is a checkpoint that any process may resume, long after
// the request that started it has gone: the paused segment's run span
// context is saved in it, in W3C form (Run.Traceparent), and the resumed
// segment's run span is placed by ResumeUnder. Nothing here runs for a run
// that never pauses.

// Traceparent is the W3C traceparent (and tracestate) of the run's span:
// what a checkpoint keeps of the paused segment's trace. Both are "" for
// the zero Run, or with tracing off.
func (r Run) Traceparent() (traceparent, tracestate string) {
	if r.m == nil {
		return "", ""
	}
	sc := r.m.span.SpanContext()
	if !sc.IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c[FieldTraceparent], c[FieldTracestate]
}

// rootKey marks a request span that started a trace of its own (its
// request brought no trace context): its span id.
type rootKey struct{}

// markRoot notes that sp, just started under ctx, is the root of a trace
// of its own when ctx had no span to be its parent.
func markRoot(parent context.Context, ctx context.Context, sp trace.Span) context.Context {
	if trace.SpanContextFromContext(parent).IsValid() {
		return ctx
	}
	return context.WithValue(ctx, rootKey{}, sp.SpanContext().SpanID())
}

// fromCaller reports whether ctx's current span context came from a
// caller (a traceparent it sent, or a span of a Go caller's), not from a
// request span that began a trace of its own.
func fromCaller(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return false
	}
	root, ok := ctx.Value(rootKey{}).(trace.SpanID)
	return !ok || root != sc.SpanID()
}

// ResumeUnder places the span of a resumed run segment, given the paused
// segment's saved traceparent and tracestate: it returns the context to
// start the run's span under and the links that span carries.
//
//   - When the resume brings trace context (ctx's span is a caller's: a
//     traceparent header, AG-UI's forwardedProps, MCP _meta, a Go
//     caller's span), the segment is that caller's child, in its trace,
//     and links to the paused segment's span.
//   - When it brings none, the segment continues the paused segment's
//     trace, the child of its saved span, so that the whole run is one
//     trace; it links to the span of the request that answered (a trace
//     of its own), when there is one.
//
// With tracing off, or nothing saved (a checkpoint of an older release, a
// run paused with tracing off), ctx is returned as it is, with no links.
func ResumeUnder(ctx context.Context, traceparent, tracestate string) (context.Context, []trace.Link) {
	if !Enabled() || traceparent == "" {
		return ctx, nil
	}
	paused := trace.SpanContextFromContext(FromTraceparent(context.Background(), traceparent, tracestate))
	if !paused.IsValid() {
		return ctx, nil
	}
	if fromCaller(ctx) {
		return ctx, []trace.Link{{SpanContext: paused}}
	}
	var links []trace.Link
	if req := trace.SpanContextFromContext(ctx); req.IsValid() {
		links = []trace.Link{{SpanContext: req}}
	}
	return trace.ContextWithRemoteSpanContext(ctx, paused), links
}
