package components

import (
	"context"
	"sync/atomic"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"

	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// NodeSpans is a RuleGo node aspect that traces each node step of a chain
// run as a span (telemetry.StartNode): the node's id, type and name, and
// the relation it told. The step's span is the current span of the
// node's context, so what the node does (an agent's LLM and tool calls)
// nests in it. With tracing off its PointCut is one atomic load.
//
// It is installed for every engine, as NodeSteps is.
type NodeSpans struct{}

func init() {
	engine.BuiltinsAspects = append(engine.BuiltinsAspects, &NodeSpans{})
}

// Order places the span around the other node aspects of ruleagent.
func (*NodeSpans) Order() int { return 790 }

// New implements types.Aspect; the aspect keeps no state of its own.
func (a *NodeSpans) New() types.Aspect { return a }

// PointCut applies while tracing is on.
func (*NodeSpans) PointCut(types.RuleContext, types.RuleMsg, string) bool { return telemetry.Enabled() }

// nodeSpan is a step's span, kept in the context of the node it belongs
// to: the next node's context derives from this one's, so the owner is
// checked before the span is ended.
type nodeSpan struct {
	rc    types.RuleContext
	node  telemetry.Node
	ended atomic.Bool
}

type nodeSpanKey struct{}

// Before implements types.BeforeAspect.
func (*NodeSpans) Before(ctx types.RuleContext, msg types.RuleMsg, _ string) types.RuleMsg {
	goctx := ctx.GetContext()
	self := ctx.Self()
	if goctx == nil || self == nil {
		return msg
	}
	info := telemetry.NodeInfo{ChainID: chainOf(ctx), NodeID: ctx.GetSelfId(), Type: self.Type()}
	if rn, ok := self.(*engine.RuleNodeCtx); ok && rn.SelfDefinition != nil {
		info.Name = rn.SelfDefinition.Name
	}
	nctx, node := telemetry.StartNode(goctx, info)
	if node.Active() {
		ctx.SetContext(withNodeSpan(nctx, &nodeSpan{rc: ctx, node: node}))
	}
	return msg
}

// After implements types.AfterAspect: the first tell that is not a
// stream chunk ends the step.
func (*NodeSpans) After(ctx types.RuleContext, msg types.RuleMsg, err error, rel string) types.RuleMsg {
	if rel == types.Stream || ctx.GetContext() == nil {
		return msg
	}
	if ns := nodeSpanFrom(ctx.GetContext()); ns != nil && ns.rc == ctx && ns.ended.CompareAndSwap(false, true) {
		// The static patterns scrub what a node's error may carry (an
		// agent node's own errors come scrubbed with its secrets).
		ns.node.End(rel, err, (*scrub.Scrubber)(nil))
	}
	return msg
}

func withNodeSpan(ctx context.Context, ns *nodeSpan) context.Context {
	return context.WithValue(ctx, nodeSpanKey{}, ns)
}

func nodeSpanFrom(ctx context.Context) *nodeSpan {
	ns, _ := ctx.Value(nodeSpanKey{}).(*nodeSpan)
	return ns
}
