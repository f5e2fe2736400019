package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/telemetry"
)

// serverSpan is the span of a request answered, which endServerSpan ends.
type serverSpan struct {
	span  telemetry.HTTPServer
	route *string
}

// startServerSpan starts the request's HTTP server span
// (telemetry.StartHTTPServer) under ctx: a child of the caller's W3C trace
// context (traceparent and tracestate headers), and the parent of what
// the request starts (a run's invoke_agent). It is named after the route
// that matched (routeOf notes it) and holds the status answered. The
// probes and /metrics, which scrapers call every few seconds, are not
// traced. With tracing off it costs one atomic load per request.
func startServerSpan(ctx context.Context, r *http.Request) (context.Context, serverSpan) {
	if !telemetry.Enabled() || isProbe(r) || r.URL.Path == "/metrics" {
		return ctx, serverSpan{}
	}
	ctx, span := telemetry.StartHTTPServer(ctx, r)
	route := new(string)
	return context.WithValue(ctx, routeKey{}, route), serverSpan{span: span, route: route}
}

// end ends the span with the status answered.
func (s serverSpan) end(status int) {
	if s.route != nil {
		s.span.End(*s.route, status)
	}
}

type routeKey struct{}

// routeOf notes, for serverSpan, the route pattern of the mux's routes
// that matched the request (the mux sets it on the request it serves).
func routeOf(mux http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r)
		if route, ok := r.Context().Value(routeKey{}).(*string); ok {
			*route = telemetry.RoutePattern(r.Pattern)
		}
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
