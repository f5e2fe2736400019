package telemetry

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// HTTPServer is the span of an HTTP request the server answers (kind
// server, the conventions' HTTP server span): what the request starts (a
// run) is its child. The zero HTTPServer does nothing.
type HTTPServer struct {
	span   trace.Span
	method string
}

// StartHTTPServer starts the span of request r, a child of the caller's
// span when r carries a traceparent (and tracestate) header. Its name is
// the method until End names the route. With tracing off it returns ctx
// and the zero HTTPServer.
func StartHTTPServer(ctx context.Context, r *http.Request) (context.Context, HTTPServer) {
	t := tracer()
	if t == nil {
		return ctx, HTTPServer{}
	}
	ctx = FromHeaders(ctx, r.Header)
	method := r.Method
	attrs := make([]attribute.KeyValue, 0, 4)
	if known(method) {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String(method))
	} else {
		attrs = append(attrs, semconv.HTTPRequestMethodKey.String("_OTHER"), semconv.HTTPRequestMethodOriginal(method))
		method = "HTTP"
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs = append(attrs, semconv.URLScheme(scheme), semconv.URLPath(r.URL.Path))
	sctx, sp := t.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return markRoot(ctx, sctx, sp), HTTPServer{span: sp, method: method}
}

// End ends the span with the route pattern that matched the request
// ("/api/v1/chains/{id}/run"; "" when none did) and the status answered:
// the span is named "{method} {route}", and a 5xx status is an error, as
// the conventions say for a server.
func (s HTTPServer) End(route string, status int) {
	if s.span == nil {
		return
	}
	if route != "" {
		s.span.SetName(s.method + " " + route)
		s.span.SetAttributes(semconv.HTTPRoute(route))
	}
	s.span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		code := strconv.Itoa(status)
		s.span.SetAttributes(semconv.ErrorTypeKey.String(code))
		s.span.SetStatus(codes.Error, code)
	}
	s.span.End()
}

// RoutePattern is the route of a net/http ServeMux pattern: the pattern
// without its method ("POST /api/v1/runs/{runId}/cancel" is
// "/api/v1/runs/{runId}/cancel").
func RoutePattern(pattern string) string {
	if i := strings.IndexByte(pattern, ' '); i >= 0 {
		return strings.TrimSpace(pattern[i+1:])
	}
	return pattern
}

// known reports whether method is one of HTTP's own (RFC 9110, PATCH).
func known(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodConnect, http.MethodOptions, http.MethodTrace, http.MethodPatch:
		return true
	}
	return false
}
