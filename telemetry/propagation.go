package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// W3C trace context (https://www.w3.org/TR/trace-context/) travels as two
// fields, under these names in HTTP headers, in MCP's _meta (2026-07-28)
// and in AG-UI's forwardedProps.ruleagent. Baggage is not passed on: it
// may carry a caller's data to servers that should not see it.
const (
	FieldTraceparent = "traceparent"
	FieldTracestate  = "tracestate"
)

var w3c = propagation.TraceContext{}

// FromHeaders returns ctx with the caller's span context from h's
// traceparent and tracestate headers as the parent of the spans started
// under it. Without a valid traceparent, or with tracing off, ctx is
// returned as it is.
func FromHeaders(ctx context.Context, h http.Header) context.Context {
	if !Enabled() || h.Get(FieldTraceparent) == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// FromTraceparent is FromHeaders for a traceparent and tracestate given
// as values (AG-UI forwardedProps, MCP _meta). A malformed traceparent
// leaves ctx as it is.
func FromTraceparent(ctx context.Context, traceparent, tracestate string) context.Context {
	if !Enabled() || traceparent == "" {
		return ctx
	}
	c := propagation.MapCarrier{FieldTraceparent: traceparent}
	if tracestate != "" {
		c[FieldTracestate] = tracestate
	}
	return w3c.Extract(ctx, c)
}

// FromMeta is FromTraceparent for an MCP request's _meta fields.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if !Enabled() || meta == nil {
		return ctx
	}
	tp, _ := meta[FieldTraceparent].(string)
	ts, _ := meta[FieldTracestate].(string)
	return FromTraceparent(ctx, tp, ts)
}

// Headers returns the traceparent (and tracestate) of ctx's current span
// as HTTP headers for an outgoing request, nil when there is none or
// tracing is off.
func Headers(ctx context.Context) map[string]string {
	if !Enabled() || !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c
}

// InjectMeta adds ctx's traceparent (and tracestate) to an outgoing MCP
// request's _meta fields, allocating the map when it is nil and there is
// something to add.
func InjectMeta(ctx context.Context, meta map[string]any) map[string]any {
	h := Headers(ctx)
	if len(h) == 0 {
		return meta
	}
	if meta == nil {
		meta = make(map[string]any, len(h))
	}
	for k, v := range h {
		meta[k] = v
	}
	return meta
}
