package components

import (
	"context"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"
)

// NodeRecorder collects the node steps of a chain run, the chains its
// tools run included, for a run's record (the editor shows a stored run's
// steps on the canvas with them). It is installed as a RuleGo aspect for
// every engine, like NodeSteps, and acts only on runs whose context
// carries a NodeLog (WithNodeLog).
type NodeRecorder struct{}

func init() {
	engine.BuiltinsAspects = append(engine.BuiltinsAspects, &NodeRecorder{})
}

// Order places it next to NodeSteps.
func (*NodeRecorder) Order() int { return 801 }

// New implements types.Aspect; the aspect keeps no state of its own.
func (a *NodeRecorder) New() types.Aspect { return a }

// PointCut applies to runs with a NodeLog.
func (*NodeRecorder) PointCut(ctx types.RuleContext, _ types.RuleMsg, _ string) bool {
	return nodeLogFrom(ctx.GetContext()) != nil
}

// Before implements types.BeforeAspect.
func (*NodeRecorder) Before(ctx types.RuleContext, msg types.RuleMsg, _ string) types.RuleMsg {
	if l := nodeLogFrom(ctx.GetContext()); l != nil {
		l.open.Store(ctx, time.Now())
	}
	return msg
}

// After implements types.AfterAspect: the node's first tell other than a
// stream chunk ends its step.
func (*NodeRecorder) After(ctx types.RuleContext, msg types.RuleMsg, err error, rel string) types.RuleMsg {
	if rel == types.Stream {
		return msg
	}
	l := nodeLogFrom(ctx.GetContext())
	if l == nil {
		return msg
	}
	v, ok := l.open.LoadAndDelete(ctx)
	if !ok {
		return msg
	}
	start := v.(time.Time)
	step := NodeStep{NodeID: ctx.GetSelfId(), Relation: rel, At: start, Duration: time.Since(start)}
	if rc := ctx.RuleChain(); rc != nil {
		step.ChainID = rc.GetNodeId().Id
	}
	if err != nil {
		step.Error = err.Error()
	}
	l.add(step)
	return msg
}

// NodeStep is one node's step in a chain run.
type NodeStep struct {
	ChainID, NodeID, Relation, Error string
	At                               time.Time
	Duration                         time.Duration
}

// NodeLog collects a run's node steps, at most Max (later ones are
// counted in Dropped).
type NodeLog struct {
	Max  int
	open sync.Map // types.RuleContext -> start time

	mu      sync.Mutex
	steps   []NodeStep
	dropped int
}

func (l *NodeLog) add(s NodeStep) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Max > 0 && len(l.steps) >= l.Max {
		l.dropped++
		return
	}
	l.steps = append(l.steps, s)
}

// Steps returns the steps so far, in the order they ended, and how many
// were dropped.
func (l *NodeLog) Steps() ([]NodeStep, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]NodeStep(nil), l.steps...), l.dropped
}

type nodeLogKey struct{}

// WithNodeLog returns ctx whose chain runs report their node steps to l.
func WithNodeLog(ctx context.Context, l *NodeLog) context.Context {
	return context.WithValue(ctx, nodeLogKey{}, l)
}

func nodeLogFrom(ctx context.Context) *NodeLog {
	if ctx == nil {
		return nil
	}
	l, _ := ctx.Value(nodeLogKey{}).(*NodeLog)
	return l
}
