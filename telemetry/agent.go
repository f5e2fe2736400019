package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// AgentInfo describes an agent's run (the ReAct loop of an ai/agent node).
type AgentInfo struct {
	// Name is the agent's name: its node's name, or its chain's id.
	Name    string
	ChainID string
	RunID   string
	// ParentRunID is the run that called this one as a sub-agent.
	ParentRunID string
	ThreadID    string
	// Model and Provider are the primary endpoint's (gen_ai.request.model,
	// gen_ai.provider.name).
	Model    string
	Provider string
	// Scrubber redacts what the spans of the run record (errors, and
	// content when it is captured).
	Scrubber Scrubber
}

// Agent is an agent run's share of its span. The zero Agent does nothing.
type Agent struct {
	span  trace.Span
	owned bool
}

// StartAgent begins an agent's run. When ctx holds a run span nobody has
// claimed yet (StartRun), the agent adds its attributes to it; otherwise
// (a Go program running the node itself, a second agent in one chain) it
// starts an invoke_agent span of its own. The returned context carries the
// run's conversation and scrubber to the spans below.
func StartAgent(ctx context.Context, info AgentInfo) (context.Context, Agent) {
	t := tracer()
	if t == nil {
		return ctx, Agent{}
	}
	ctx = context.WithValue(ctx, scopeKey{}, &runScope{conversation: info.ThreadID, scrub: info.Scrubber})
	attrs := make([]attribute.KeyValue, 0, 8)
	if info.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(info.Model))
	}
	if info.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(info.Provider))
	}
	if m, _ := ctx.Value(runKey{}).(*runMark); m != nil && m.claimed.CompareAndSwap(false, true) {
		if info.ThreadID != "" {
			attrs = append(attrs, semconv.GenAIConversationID(info.ThreadID))
		}
		m.span.SetAttributes(attrs...)
		return ctx, Agent{span: m.span}
	}
	name := info.Name
	if name == "" {
		name = info.ChainID
	}
	attrs = append(attrs, semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(name), AttrRunID.String(info.RunID))
	if info.ChainID != "" {
		attrs = append(attrs, semconv.GenAIAgentID(info.ChainID), AttrChainID.String(info.ChainID))
	}
	if info.ThreadID != "" {
		attrs = append(attrs, semconv.GenAIConversationID(info.ThreadID))
	}
	if info.ParentRunID != "" {
		attrs = append(attrs, AttrParentRunID.String(info.ParentRunID))
	}
	ctx, sp := t.Start(ctx, spanName("invoke_agent", name), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Agent{span: sp, owned: true}
}

// Active reports whether the agent has a span to record in.
func (a Agent) Active() bool { return a.span != nil }

// End records the agent's usage (sub-agents included) and, for a span of
// its own, its end: errType is the run's error code, "" on success.
func (a Agent) End(u Usage, outcome, errType, msg string) {
	if a.span == nil {
		return
	}
	a.span.SetAttributes(u.attributes()...)
	if !a.owned {
		return
	}
	a.span.SetAttributes(AttrRunOutcome.String(outcome))
	setError(a.span, errType, msg)
	a.span.End()
}
