package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/telemetry"
)

// traceContext takes the caller's W3C trace context (traceparent and
// tracestate headers) into the request's context: a run the request
// starts is a child of the caller's span, in the caller's trace. With
// tracing off it costs one atomic load per request.
func traceContext(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if telemetry.Enabled() && r.Header.Get(telemetry.FieldTraceparent) != "" {
			r = r.WithContext(telemetry.FromHeaders(r.Context(), r.Header))
		}
		next.ServeHTTP(w, r)
	})
}

// forwardedTrace takes the trace context an AG-UI client puts in
// forwardedProps.ruleagent.traceparent (and .tracestate): front ends that
// cannot set headers on their requests pass it there. It wins over the
// request's headers, which a proxy in between may have set.
func forwardedTrace(ctx context.Context, forwarded json.RawMessage) context.Context {
	if !telemetry.Enabled() || len(forwarded) == 0 {
		return ctx
	}
	tc := gjson.GetManyBytes(forwarded, "ruleagent."+telemetry.FieldTraceparent, "ruleagent."+telemetry.FieldTracestate)
	return telemetry.FromTraceparent(ctx, tc[0].String(), tc[1].String())
}
