package components

import (
	"context"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"

	"github.com/ruleagent/ruleagent/events"
)

// NodeSteps is a RuleGo node aspect that reports the nodes of a chain run
// on behalf of a tool call as AG-UI steps: STEP_STARTED before a node
// runs, STEP_FINISHED when it tells its result, named after the node and
// attributed to the tool call (metadata toolCallId, nodeId, chainId). A
// client can so show a rulechain tool's progress inside its tool-call card.
//
// It is installed for every engine (as RuleGo installs its own built-in
// aspects), and acts only on messages a chain tool started: RuleGo's own
// debug callbacks run asynchronously, so they could not keep the order.
type NodeSteps struct{}

func init() {
	engine.BuiltinsAspects = append(engine.BuiltinsAspects, &NodeSteps{})
}

// Order places the steps just outside the node, after RuleGo's validator.
func (*NodeSteps) Order() int { return 800 }

// New implements types.Aspect; the aspect keeps no state of its own.
func (a *NodeSteps) New() types.Aspect { return a }

// PointCut applies to messages that carry a step recorder.
func (*NodeSteps) PointCut(ctx types.RuleContext, _ types.RuleMsg, _ string) bool {
	return stepsFrom(ctx.GetContext()) != nil
}

// Before implements types.BeforeAspect.
func (*NodeSteps) Before(ctx types.RuleContext, msg types.RuleMsg, _ string) types.RuleMsg {
	if st := stepsFrom(ctx.GetContext()); st != nil {
		st.start(ctx)
	}
	return msg
}

// After implements types.AfterAspect. Stream tells are chunks, not the
// node's result; only the first other tell finishes the step.
// A node that paused (RelSuspended) leaves its step open: the step goes
// on when the run is resumed.
func (*NodeSteps) After(ctx types.RuleContext, msg types.RuleMsg, err error, rel string) types.RuleMsg {
	if rel == types.Stream {
		return msg
	}
	if st := stepsFrom(ctx.GetContext()); st != nil {
		if rel == RelSuspended {
			st.open.Delete(ctx)
			return msg
		}
		st.finish(ctx, err)
	}
	return msg
}

// stepRecorder emits the steps of one chain run into its tool call's sink.
type stepRecorder struct {
	sink       events.Sink
	toolCallID string
	chainID    string
	names      map[string]string // node id -> name
	open       sync.Map          // types.RuleContext -> *openStep
}

type openStep struct {
	name  string
	start time.Time
	once  sync.Once
}

type stepsKey struct{}

func withSteps(ctx context.Context, r *stepRecorder) context.Context {
	return context.WithValue(ctx, stepsKey{}, r)
}

func stepsFrom(ctx context.Context) *stepRecorder {
	if ctx == nil {
		return nil
	}
	r, _ := ctx.Value(stepsKey{}).(*stepRecorder)
	return r
}

func (r *stepRecorder) start(ctx types.RuleContext) {
	id := ctx.GetSelfId()
	if r.chainID != chainOf(ctx) {
		// A node of another chain this chain called (a flow node): its own
		// tool call, if any, reports it.
		return
	}
	if s := resuming(ctx.GetContext(), r.chainID, id); s != nil && s.Step != "" {
		// The node's step, open when the run paused, was opened again by
		// the resumed run's stream: it goes on under its name.
		r.open.Store(ctx, &openStep{name: s.Step, start: time.Now()})
		return
	}
	base := r.names[id]
	if base == "" {
		base = id
	}
	name := base
	if n, ok := r.sink.(events.StepNamer); ok {
		name = n.ReserveStep(base)
	}
	r.open.Store(ctx, &openStep{name: name, start: time.Now()})
	r.sink.Emit(events.Event{Type: events.StepStarted, StepName: name,
		Meta: events.Meta{ToolCallID: r.toolCallID, NodeID: id, ChainID: r.chainID}})
}

func (r *stepRecorder) finish(ctx types.RuleContext, err error) {
	v, ok := r.open.LoadAndDelete(ctx)
	if !ok {
		return
	}
	s := v.(*openStep)
	s.once.Do(func() {
		r.sink.Emit(events.Event{Type: events.StepFinished, StepName: s.name,
			Meta: events.Meta{ToolCallID: r.toolCallID, NodeID: ctx.GetSelfId(), ChainID: r.chainID,
				DurationMs: time.Since(s.start).Milliseconds(), IsError: err != nil}})
	})
}

func chainOf(ctx types.RuleContext) string {
	if rc := ctx.RuleChain(); rc != nil {
		return rc.GetNodeId().Id
	}
	return ""
}
