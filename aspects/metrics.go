package aspects

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ruleagent/ruleagent/metrics"
)

// Metrics counts runs, LLM requests, tokens and streamed chunks into the
// Prometheus collectors of package metrics. Tool calls are counted by the
// tool wrapper itself, so they are counted even without this aspect.
type Metrics struct{ Everywhere }

// Order places metrics outermost, so durations include other aspects.
func (*Metrics) Order() int { return 0 }

// OnCompleted implements Completed.
func (*Metrics) OnCompleted(_ context.Context, _ *Point, out *RunOutput, err error) {
	switch {
	case err == nil:
		metrics.Runs.WithLabelValues("success").Inc()
	case errors.Is(err, context.Canceled):
		metrics.Runs.WithLabelValues("cancelled").Inc()
	default:
		metrics.Runs.WithLabelValues("error").Inc()
	}
	if out != nil {
		metrics.RunDuration.Observe(out.Duration.Seconds())
	}
}

// AfterLLM implements AfterLLM.
func (*Metrics) AfterLLM(_ context.Context, p *Point, r *LLMResponse) error {
	model := r.Model
	if model == "" {
		model = p.Model
	}
	metrics.LLMRequests.WithLabelValues(model, "ok").Inc()
	add := func(kind string, n int64) {
		if n > 0 {
			metrics.Tokens.WithLabelValues(model, kind).Add(float64(n))
		}
	}
	add("prompt", r.Usage.PromptTokens)
	add("completion", r.Usage.CompletionTokens)
	add("cached", r.Usage.CachedTokens)
	add("reasoning", r.Usage.ReasoningTokens)
	return nil
}

// OnChunk implements StreamChunk.
func (*Metrics) OnChunk(context.Context, *Point, *Chunk) error {
	metrics.Chunks.Inc()
	return nil
}

func init() {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(RegisterFactory("logging", newLogging))
	must(RegisterFactory("metrics", func(json.RawMessage) (Aspect, error) { return &Metrics{}, nil }))
}
