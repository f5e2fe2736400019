package agent

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/telemetry"
)

// discardSpans is an exporter that drops what it is given: the benchmarks
// pay for the spans and the batch processor, not for a network.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// tracing turns tracing on for a benchmark, as telemetry/otlp does (a
// batch span processor), or leaves it off.
func tracing(b *testing.B, on bool) {
	telemetry.Install(nil, telemetry.Options{})
	if !on {
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	telemetry.Install(tp, telemetry.Options{})
	b.Cleanup(func() {
		telemetry.Install(nil, telemetry.Options{})
		_ = tp.Shutdown(context.Background())
	})
}

// BenchmarkChatSpan is one streamed LLM call (a tool call and some text)
// against the in-process replay of the scripted model, with tracing off
// and on: the difference is what a chat span costs (the span, the time to
// the first chunk, the usage and finish reason).
func BenchmarkChatSpan(b *testing.B) {
	srv := llmtest.NewServer(b, benchScript())
	rec := &recorder{}
	if _, err := engineWith(b, srv.URL, rec).Run(context.Background(), Input{Messages: benchInput, Stream: true}, &sseSink{}); err != nil {
		b.Fatal(err)
	}
	a := engineWith(b, "http://replay.invalid/v1", &replayModel{turns: rec.turns[:1]})
	req := &Request{Messages: benchInput, Tools: a.cfg.Tools.ToolsJSON()}
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			tracing(b, on)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.cfg.LLM.Complete(ctx, req, true, DiscardDeltas, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTracedRun is BenchmarkEngineTurn's 4-turn, 3-tool run, whole,
// with tracing off and on (an invoke_agent span, four chat spans, three
// execute_tool spans).
func BenchmarkTracedRun(b *testing.B) {
	srv := llmtest.NewServer(b, benchScript())
	rec := &recorder{}
	if _, err := engineWith(b, srv.URL, rec).Run(context.Background(), Input{Messages: benchInput, Stream: true}, &sseSink{}); err != nil {
		b.Fatal(err)
	}
	a := engineWith(b, "http://replay.invalid/v1", &replayModel{turns: rec.turns})
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			tracing(b, on)
			sink := &sseSink{}
			b.ReportAllocs()
			for b.Loop() {
				out, err := a.Run(context.Background(), Input{Messages: benchInput, Stream: true}, sink)
				if err != nil || out.Steps != 4 {
					b.Fatal(err, out)
				}
			}
		})
	}
}
