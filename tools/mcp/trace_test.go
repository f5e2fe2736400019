package mcptool

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
)

// TestTraceContextReachesTheServer: with tracing on, an MCP tool call
// carries its execute_tool span's W3C trace context to the server, in
// _meta.traceparent (2026-07-28) and, over HTTP, in the traceparent
// header; the TypeScript server of the 2026-07-28 line receives both.
// With tracing off it carries neither.
func TestTraceContextReachesTheServer(t *testing.T) {
	script := sdk2Server(t)
	for _, tc := range []struct{ name, entry string }{
		{"http", `{"server":"` + startSDK2HTTP(t) + `"}`},
		{"stdio", `{"command":"node","args":["` + script + `","stdio"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := mustBuild(t, Options{}, `[{"type":"mcp","name":"ts","config":`+tc.entry+`}]`)
			var got struct{ Meta, Header string }
			if err := json.Unmarshal([]byte(mustInvoke(t, set, "ts__trace", `{}`).Content), &got); err != nil || got.Meta != "" || got.Header != "" {
				t.Fatalf("tracing off: %+v %v", got, err)
			}

			exp := tracetest.NewInMemoryExporter()
			telemetry.Install(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), telemetry.Options{})
			defer telemetry.Install(nil, telemetry.Options{})
			o := set.Invoke(context.Background(), &tools.Run{Sink: events.Discard}, tools.Call{ID: "call_t", Name: "ts__trace", Args: json.RawMessage(`{}`)})
			if err := json.Unmarshal([]byte(o.Content), &got); err != nil {
				t.Fatalf("%q: %v", o.Content, err)
			}
			var span tracetest.SpanStub
			for _, s := range exp.GetSpans() {
				if s.Name == "execute_tool ts__trace" {
					span = s
				}
			}
			want := "00-" + span.SpanContext.TraceID().String() + "-" + span.SpanContext.SpanID().String() + "-01"
			if got.Meta != want {
				t.Errorf("_meta.traceparent %q, want the call's span %q", got.Meta, want)
			}
			if tc.name == "http" && got.Header != want {
				t.Errorf("traceparent header %q, want %q", got.Header, want)
			}
		})
	}
}
