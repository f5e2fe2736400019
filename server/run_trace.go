package server

import (
	"cmp"
	"context"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/telemetry"
)

// startSpan opens the run's span, the child of the caller's trace context
// (taken from the request: see traceContext), under which the chain's node
// steps and its agent's calls nest. A run resumed from checkpoint resumed
// (nil: a new run), or from an input pause (req.Traceparent), continues
// the paused segment's trace, or links to it when the resume brings a
// caller's trace context (telemetry.ResumeUnder).
func startSpan(ctx context.Context, e types.RuleEngine, req RunRequest, resumed *checkpoint.State) (context.Context, telemetry.Run) {
	if !telemetry.Enabled() {
		return ctx, telemetry.Run{}
	}
	name := req.ChainID
	if def := e.Definition(); def.RuleChain.Name != "" {
		name = def.RuleChain.Name
	}
	info := telemetry.RunInfo{Agent: name, ChainID: req.ChainID, RunID: req.RunID,
		ThreadID: req.ThreadID, Source: cmp.Or(req.Source, "api")}
	switch {
	case resumed != nil:
		ctx, info.Links = telemetry.ResumeUnder(ctx, resumed.Traceparent, resumed.Tracestate)
	case req.Traceparent != "":
		ctx, info.Links = telemetry.ResumeUnder(ctx, req.Traceparent, req.Tracestate)
	}
	return telemetry.StartRun(ctx, info)
}

// endSpan ends the run's span with its outcome and whole usage.
func endSpan(span telemetry.Run, res *RunResult) {
	if !span.Active() {
		return
	}
	var u telemetry.Usage
	for _, e := range res.Usage {
		u.Input += e.InputTokens
		u.Output += e.OutputTokens
		u.CacheRead += e.CachedInputTokens
		u.Reasoning += e.ReasoningTokens
	}
	end := telemetry.RunEnd{Outcome: res.Outcome, Usage: &u}
	if res.Outcome == OutcomeError {
		end.ErrorType, end.Message = cmp.Or(res.ErrorCode, "_OTHER"), res.Error
	}
	span.End(end)
}
