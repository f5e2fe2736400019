package tools

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// BenchmarkInvokeFull is one tool call through the whole wrapper, as an
// agent node makes it: argument validation, the aspects (metrics always;
// with a logging aspect writing text records), call events, the secret
// scrubber over the result (with the LLM key and a bound secret to look
// for) and the tool-call metrics. The tool itself does nothing.
func BenchmarkInvokeFull(b *testing.B) {
	echo := Func{Spec: Info{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Fn: func(_ context.Context, args json.RawMessage) (Result, error) {
			return Result{Text: "the file has 42 lines; nothing secret here"}, nil
		}}
	for _, bc := range []struct {
		name    string
		aspects []aspects.Aspect
	}{
		{"metrics", []aspects.Aspect{&aspects.Metrics{}}},
		{"metrics+logging", []aspects.Aspect{&aspects.Metrics{}, &aspects.Logging{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			am, err := aspects.NewManager(bc.aspects...)
			if err != nil {
				b.Fatal(err)
			}
			sc := scrub.New()
			sc.AddSecrets("sk-bench-0123456789abcdef", "hunter2-bound-password")
			set := testSet(b, echo)
			r := &Run{Sink: events.Discard, Aspects: am, Scrubber: sc.Child(), MaxOutput: 50000,
				Point: aspects.Point{ChainID: "chain", NodeID: "agent", RunID: "run"}}
			call := Call{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				set.Invoke(ctx, r, call)
			}
		})
	}
}

// discardSpans is an exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkToolSpan is BenchmarkInvokeFull/metrics with tracing off, on
// (an execute_tool span through a batch span processor, as telemetry/otlp
// installs it) and on with content captured (arguments and result
// scrubbed into the span): the difference is a tool call's span.
func BenchmarkToolSpan(b *testing.B) {
	echo := Func{Spec: Info{Name: "echo", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		Fn: func(_ context.Context, args json.RawMessage) (Result, error) {
			return Result{Text: "the file has 42 lines; nothing secret here"}, nil
		}}
	for _, bc := range []struct {
		name        string
		on, content bool
	}{{"off", false, false}, {"on", true, false}, {"on+content", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			telemetry.Install(nil, telemetry.Options{})
			if bc.on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
				telemetry.Install(tp, telemetry.Options{CaptureContent: bc.content})
				b.Cleanup(func() {
					telemetry.Install(nil, telemetry.Options{})
					_ = tp.Shutdown(context.Background())
				})
			}
			am, err := aspects.NewManager(&aspects.Metrics{})
			if err != nil {
				b.Fatal(err)
			}
			sc := scrub.New()
			sc.AddSecrets("sk-bench-0123456789abcdef", "hunter2-bound-password")
			set := testSet(b, echo)
			r := &Run{Sink: events.Discard, Aspects: am, Scrubber: sc.Child(), MaxOutput: 50000,
				Point: aspects.Point{ChainID: "chain", NodeID: "agent", RunID: "run"}}
			call := Call{ID: "call_1", Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				set.Invoke(ctx, r, call)
			}
		})
	}
}
