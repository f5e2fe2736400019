package agent

import (
	"context"
	"errors"

	"github.com/ruleagent/ruleagent/telemetry"
)

// startSpan begins the run's share of its trace (see telemetry.StartAgent):
// the run span its starter opened, or an invoke_agent span of its own.
func (r *run) startSpan(ctx context.Context) (context.Context, telemetry.Agent) {
	if !telemetry.Enabled() {
		return ctx, telemetry.Agent{}
	}
	ep := r.llm().eps[0]
	host, _ := hostPort(ep.URL)
	info := telemetry.AgentInfo{Name: r.point.NodeName, ChainID: r.point.ChainID, RunID: r.in.RunID,
		ParentRunID: r.in.ParentRunID, ThreadID: r.in.ThreadID, Model: ep.Model, Provider: genAIProvider(host)}
	if info.Name == "" {
		info.Name = r.point.ChainID
	}
	if r.in.Scrubber != nil {
		info.Scrubber = r.in.Scrubber
	}
	return telemetry.StartAgent(ctx, info)
}

// endSpan records how the run ended.
func (r *run) endSpan(span telemetry.Agent, err error) {
	if !span.Active() {
		return
	}
	t := r.ledger.Total()
	u := telemetry.Usage{Input: t.PromptTokens, Output: t.CompletionTokens, CacheRead: t.CachedTokens, Reasoning: t.ReasoningTokens}
	var re *RunError
	switch {
	case err == nil:
		span.End(u, "success", "", "")
	case errors.Is(err, ErrSuspended):
		// Paused: the run goes on where it is resumed, in a span of its own.
		span.End(u, "interrupt", "", "")
	case errors.As(err, &re) && re.Code == CodeCancelled:
		span.End(u, "cancelled", "", "")
	case errors.As(err, &re):
		span.End(u, "error", re.Code, r.scrub(err.Error()))
	default:
		span.End(u, "error", CodePanic, r.scrub(err.Error()))
	}
}
