package telemetry

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of a rule chain's node steps.
const (
	AttrNodeID       = attribute.Key("ruleagent.node.id")
	AttrNodeType     = attribute.Key("ruleagent.node.type")
	AttrNodeName     = attribute.Key("ruleagent.node.name")
	AttrNodeRelation = attribute.Key("ruleagent.node.relation")
)

type nodeParentKey struct{}

// withNodeParent makes sc the parent of the node steps of chain runs
// started under ctx.
func withNodeParent(ctx context.Context, sc trace.SpanContext) context.Context {
	return context.WithValue(ctx, nodeParentKey{}, sc)
}

// NodesUnder returns ctx with its current span (a tool call's) as the
// parent of the node steps of the chain run started under it, so that the
// chain's nodes are siblings under the call. With tracing off it returns
// ctx.
func NodesUnder(ctx context.Context) context.Context {
	if !Enabled() {
		return ctx
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx
	}
	return withNodeParent(ctx, sc)
}

// NodeInfo describes a node step.
type NodeInfo struct {
	ChainID string
	NodeID  string
	// Type is the node's component type (ai/agent, jsTransform, ...).
	Type string
	Name string
}

// Node is a node step's span. The zero Node does nothing.
type Node struct{ span trace.Span }

// StartNode starts a node step's span. Its parent is the span its chain run
// started under (StartRun, NodesUnder); a chain run under no span at all
// records no node steps, so that a Go program that runs chains without
// tracing them gets no trace per node. Work the node does under the
// returned context (an agent's LLM calls) is the step's child.
func StartNode(ctx context.Context, info NodeInfo) (context.Context, Node) {
	t := tracer()
	if t == nil {
		return ctx, Node{}
	}
	parent, ok := ctx.Value(nodeParentKey{}).(trace.SpanContext)
	if !ok {
		// The first node of a chain run under a span of the caller's:
		// that span is the parent of this node and of those after it.
		if parent = trace.SpanContextFromContext(ctx); !parent.IsValid() {
			return ctx, Node{}
		}
		ctx = withNodeParent(ctx, parent)
	}
	attrs := []attribute.KeyValue{AttrChainID.String(info.ChainID), AttrNodeID.String(info.NodeID), AttrNodeType.String(info.Type)}
	if info.Name != "" {
		attrs = append(attrs, AttrNodeName.String(info.Name))
	}
	// The previous node's span is current in ctx (RuleGo hands each node
	// the context of the one before): the step is started under the
	// chain's parent instead, so that steps are siblings.
	ctx, sp := t.Start(trace.ContextWithSpanContext(ctx, parent), "node "+info.NodeID,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Node{span: sp}
}

// Active reports whether the step has a span.
func (n Node) Active() bool { return n.span != nil }

// End ends the step: relation is what the node told (Success, Failure,
// True, ...; "" for nothing), err its error if it failed, whose message sc
// scrubs (nil: recorded as it is).
func (n Node) End(relation string, err error, sc Scrubber) {
	if n.span == nil || !n.span.IsRecording() {
		return
	}
	if relation != "" {
		n.span.SetAttributes(AttrNodeRelation.String(relation))
	}
	if err != nil {
		msg := err.Error()
		if sc != nil {
			msg = sc.Scrub(msg)
		}
		setError(n.span, errorType(err), msg)
	}
	n.span.End()
}

// errorType classifies an error for error.type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// WithSpanOf returns dst with src's current span as its current span, for
// code that runs with a context of its own (an agent node running in its
// run's context) but belongs under a span started elsewhere (its node
// step). With tracing off, or the same span in both, dst is returned.
func WithSpanOf(dst, src context.Context) context.Context {
	if !Enabled() || dst == src {
		return dst
	}
	sp := trace.SpanFromContext(src)
	if !sp.SpanContext().IsValid() || sp.SpanContext().Equal(trace.SpanContextFromContext(dst)) {
		return dst
	}
	return trace.ContextWithSpan(dst, sp)
}
