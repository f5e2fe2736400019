package components

import (
	"context"
	"errors"
	"sync"
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
// A node can start its step and tell nothing: an Around aspect (a policy)
// refuses it before it runs, it panics (RuleGo recovers), or it ends its
// branch without a relation. Every chain run keeps its open steps, and
// when it completes the steps still open end with ErrNodeToldNothing, so
// that no started span is left unended.
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

// ErrNodeToldNothing is the error of a node step that ended with its chain
// run, the node having told no result (refused before it ran, panicked,
// or ended its branch without a relation).
var ErrNodeToldNothing = errors.New("the node told no result (refused before it ran, panicked, or ended its branch without a relation)")

// openNodes are the steps of one chain run not ended yet.
type openNodes struct {
	mu    sync.Mutex
	spans map[*nodeSpan]struct{}
}

type openNodesKey struct{}

func (o *openNodes) add(ns *nodeSpan) {
	o.mu.Lock()
	o.spans[ns] = struct{}{}
	o.mu.Unlock()
}

func (o *openNodes) remove(ns *nodeSpan) {
	o.mu.Lock()
	delete(o.spans, ns)
	o.mu.Unlock()
}

// Start implements types.StartAspect: the chain run keeps its open steps.
func (*NodeSpans) Start(ctx types.RuleContext, msg types.RuleMsg) (types.RuleMsg, error) {
	if goctx := ctx.GetContext(); goctx != nil {
		ctx.SetContext(context.WithValue(goctx, openNodesKey{}, &openNodes{spans: map[*nodeSpan]struct{}{}}))
	}
	return msg, nil
}

// Completed implements types.CompletedAspect: the steps of the run still
// open (their node told nothing) end with ErrNodeToldNothing.
func (*NodeSpans) Completed(ctx types.RuleContext, msg types.RuleMsg) types.RuleMsg {
	goctx := ctx.GetContext()
	if goctx == nil {
		return msg
	}
	o, _ := goctx.Value(openNodesKey{}).(*openNodes)
	if o == nil {
		return msg
	}
	o.mu.Lock()
	left := make([]*nodeSpan, 0, len(o.spans))
	for ns := range o.spans {
		left = append(left, ns)
	}
	clear(o.spans)
	o.mu.Unlock()
	for _, ns := range left {
		if ns.ended.CompareAndSwap(false, true) {
			ns.node.End("", ErrNodeToldNothing, nil)
		}
	}
	return msg
}

// nodeSpan is a step's span, kept in the context of the node it belongs
// to: the next node's context derives from this one's, so the owner is
// checked before the span is ended.
type nodeSpan struct {
	rc    types.RuleContext
	node  telemetry.Node
	ended atomic.Bool
	// run is the chain run's open steps, or nil.
	run *openNodes
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
		ns := &nodeSpan{rc: ctx, node: node}
		if ns.run, _ = goctx.Value(openNodesKey{}).(*openNodes); ns.run != nil {
			ns.run.add(ns)
		}
		ctx.SetContext(withNodeSpan(nctx, ns))
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
		if ns.run != nil {
			ns.run.remove(ns)
		}
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
