package server

import (
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestHTTPServerSpans: each request answered is an HTTP server span (kind
// server) named "{method} {route}", in the caller's trace (traceparent),
// with the method, route, path and status; the run it starts is its
// child. A 5xx is an error, a 4xx not; the probes are not traced.
func TestHTTPServerSpans(t *testing.T) {
	e := newTraceEnv(t)
	e.post(t, "/api/v1/chains/traced/run", `{"input":"go"}`, "traceparent", callerParent, "tracestate", "vendor=1")
	tr := tree{t: t, spans: e.spans.GetSpans()}
	srv := tr.one("POST /api/v1/chains/{id}/run")
	if srv.SpanKind != trace.SpanKindServer || srv.SpanContext.TraceID().String() != callerTrace || srv.Parent.SpanID().String() != callerSpan ||
		!srv.Parent.IsRemote() || srv.SpanContext.TraceState().Get("vendor") != "1" {
		t.Errorf("server span: kind %v, in %s under %s", srv.SpanKind, srv.SpanContext.TraceID(), srv.Parent.SpanID())
	}
	for k, want := range map[string]any{"http.request.method": "POST", "http.route": "/api/v1/chains/{id}/run",
		"url.path": "/api/v1/chains/traced/run", "url.scheme": "http", "http.response.status_code": int64(200)} {
		if got := attrOf(srv, k).AsInterface(); got != want {
			t.Errorf("server span %s = %v, want %v", k, got, want)
		}
	}
	if srv.Status.Code == codes.Error {
		t.Errorf("a 200 is an error: %+v", srv.Status)
	}
	tr.under(tr.one("invoke_agent Traced"), srv)

	// Not found: a 4xx, no error; no traceparent: a trace of its own.
	e.spans.Reset()
	resp, err := http.Get(e.base + "/api/v1/runs/run-x/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr = tree{t: t, spans: e.spans.GetSpans()}
	nf := tr.one("GET /api/v1/runs/{runId}/events")
	if attrOf(nf, "http.response.status_code").AsInt64() != int64(resp.StatusCode) || resp.StatusCode != 404 || nf.Status.Code == codes.Error ||
		nf.Parent.IsValid() {
		t.Errorf("404 span: %d %+v %v", resp.StatusCode, nf.Status, nf.Parent)
	}

	// A 5xx is an error: the usage route of a server without a ledger
	// answers 503.
	e.spans.Reset()
	if resp, err = http.Get(e.base + "/api/v1/usage"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	un := tree{t: t, spans: e.spans.GetSpans()}.one("GET /api/v1/usage")
	if resp.StatusCode != 503 || un.Status.Code != codes.Error || attrOf(un, "error.type").AsString() != "503" {
		t.Errorf("503 span: %d %+v %v", resp.StatusCode, un.Status, un.Attributes)
	}

	e.spans.Reset()
	if resp, err = http.Get(e.base + "/healthz"); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if spans := e.spans.GetSpans(); len(spans) != 0 {
		t.Errorf("the probe was traced: %v", spans[0].Name)
	}
}
