package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of ruleagent's own, beside the GenAI conventions' gen_ai.*.
const (
	AttrRunID       = attribute.Key("ruleagent.run.id")
	AttrParentRunID = attribute.Key("ruleagent.run.parent_id")
	AttrRunSource   = attribute.Key("ruleagent.run.source")
	AttrRunOutcome  = attribute.Key("ruleagent.run.outcome")
	AttrChainID     = attribute.Key("ruleagent.chain.id")
)

// Usage is a span's token usage by kind. Cached input tokens are part of
// Input and reasoning tokens part of Output, as the conventions count them.
type Usage struct {
	Input, Output, CacheRead, Reasoning int64
}

func (u Usage) attributes() []attribute.KeyValue {
	kv := make([]attribute.KeyValue, 0, 4)
	kv = append(kv, semconv.GenAIUsageInputTokens(int(u.Input)), semconv.GenAIUsageOutputTokens(int(u.Output)))
	if u.CacheRead > 0 {
		kv = append(kv, semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)))
	}
	if u.Reasoning > 0 {
		kv = append(kv, semconv.GenAIUsageReasoningOutputTokens(int(u.Reasoning)))
	}
	return kv
}

// RunInfo describes a run as its starter knows it.
type RunInfo struct {
	// Agent is the agent's name (gen_ai.agent.name): its chain's name, or
	// the chain id.
	Agent string
	// ChainID is the chain the run runs (gen_ai.agent.id).
	ChainID     string
	RunID       string
	ParentRunID string
	// ThreadID is the conversation (gen_ai.conversation.id).
	ThreadID string
	// Source says where the run came from: run, agui, openai, mcp, cli,
	// or subagent.
	Source string
	// Links are the spans the run's span links to (a resumed segment's:
	// see ResumeUnder).
	Links []trace.Link
}

// runMark is a run span waiting for the agent that runs in it.
type runMark struct {
	span    trace.Span
	claimed atomic.Bool
}

type runKey struct{}

// Run is a run's span (invoke_agent), started where the run begins: the
// server for the runs it is asked for, the sub-agent tool for a
// sub-agent. The first agent that runs in its context (StartAgent) adds
// its model and usage to it instead of starting a span of its own. The
// zero Run does nothing.
type Run struct{ m *runMark }

// StartRun starts a run's span, a child of ctx's span (a caller's, taken
// from trace context, or the tool call of a parent run). The node steps of
// the chain run under the returned context are its children.
func StartRun(ctx context.Context, info RunInfo) (context.Context, Run) {
	t := tracer()
	if t == nil {
		return ctx, Run{}
	}
	name := info.Agent
	if name == "" {
		name = info.ChainID
	}
	attrs := make([]attribute.KeyValue, 0, 8)
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
	if info.Source != "" {
		attrs = append(attrs, AttrRunSource.String(info.Source))
	}
	opts := make([]trace.SpanStartOption, 0, 3)
	opts = append(opts, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if len(info.Links) > 0 {
		opts = append(opts, trace.WithLinks(info.Links...))
	}
	ctx, sp := t.Start(ctx, spanName("invoke_agent", name), opts...)
	m := &runMark{span: sp}
	ctx = context.WithValue(ctx, runKey{}, m)
	return withNodeParent(ctx, sp.SpanContext()), Run{m: m}
}

// RunEnd is how a run ended.
type RunEnd struct {
	// Outcome is success, error, cancelled or interrupt.
	Outcome string
	// ErrorType classifies a failure (error.type): the run's error code.
	ErrorType string
	// Message describes a failure (secrets already scrubbed).
	Message string
	// Usage is the run's whole usage, sub-agents included; nil keeps what
	// the agent recorded.
	Usage *Usage
}

// Active reports whether the run has a span.
func (r Run) Active() bool { return r.m != nil }

// Event records a moment of the run (a pause for a person, say).
func (r Run) Event(name string, attrs ...attribute.KeyValue) {
	if r.m != nil {
		r.m.span.AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// End ends the run's span.
func (r Run) End(e RunEnd) {
	if r.m == nil {
		return
	}
	sp := r.m.span
	if e.Usage != nil {
		sp.SetAttributes(e.Usage.attributes()...)
	}
	if e.Outcome != "" {
		sp.SetAttributes(AttrRunOutcome.String(e.Outcome))
	}
	setError(sp, e.ErrorType, e.Message)
	sp.End()
}

// setError marks sp as failed with error type typ; nothing when typ is "".
func setError(sp trace.Span, typ, msg string) {
	if typ == "" {
		return
	}
	sp.SetAttributes(semconv.ErrorTypeKey.String(typ))
	sp.SetStatus(codes.Error, msg)
}
