package components

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// CancelGrace is how long a cancelled chain run may take to stop: RuleGo
// checks for cancellation between nodes, so the running node finishes
// first (an agent node stops at once).
const CancelGrace = 5 * time.Second

// ChainRun is one run of a rule chain. The server's runs and rule-chain
// tools start chains through it alone, so that cancellation, the order of
// a chain's ends and what reaches the caller are the same everywhere:
//
//   - the run has a context of its own, derived from the caller's;
//     cancelling it, or the engine shutting down, stops the chain before
//     its next node;
//   - its events reach the caller's sink through a gate: once the caller
//     stops waiting (Stop), nothing of the run reaches the sink again,
//     even from a node that ignores cancellation and runs on;
//   - Ends are in the order of the end nodes in the chain definition, the
//     same every time (ends of one node, and of nodes the definition does
//     not hold, such as a sub-chain's, last, in the order they happened);
//   - Done is closed when the chain has ended; no goroutine waits for it.
type ChainRun struct {
	engine types.RuleEngine
	ctx    context.Context
	cancel context.CancelCauseFunc
	gate   *gate
	onDone func(*ChainRun)
	opts   []types.RuleContextOption
	done   chan struct{}
	once   sync.Once
	// unwatch stops watching the engine's shutdown.
	unwatch func() bool

	mu   sync.Mutex
	ends []ChainEnd
	// pauses are the suspensions its agent nodes reported (Suspended).
	pauses pauses
}

// ChainEnd is one end of a chain run (RuleGo's OnEnd, but for Stream).
type ChainEnd struct {
	NodeID   string
	Msg      types.RuleMsg
	Err      error
	Relation string
}

// Failed reports whether the end is a failure.
func (e *ChainEnd) Failed() bool { return e.Err != nil || e.Relation == types.Failure }

// ChainRunOptions configure StartChain.
type ChainRunOptions struct {
	// Sink receives the run's events, through the run's gate (nil: none).
	Sink events.Sink
	// Steps, with ToolCallID, reports the nodes of chain ChainID (the
	// engine's definition's by default) as the steps of that tool call
	// (see NodeSteps), through the gate too.
	Steps      events.Sink
	ToolCallID string
	ChainID    string
	// RunContext gives the chain's agent nodes the run's context as it is
	// (see WithRunContext), for a caller that cancels it itself.
	RunContext bool
	// Options are further RuleGo options (debug mode, node callbacks).
	Options []types.RuleContextOption
	// Resume, when set, is a suspension of a run of this chain: the run
	// enters the chain at the paused node, which resumes its run (see
	// Suspension); Start is then given the message the node had received
	// (Suspension.Message).
	Resume *Suspension
	// OnDone is called once when the chain has ended, before Done closes,
	// from the goroutine RuleGo ends it on: possibly before StartChain has
	// returned, so it uses the run it is given.
	OnDone func(*ChainRun)
}

// StartChain starts a run of engine e on msg under ctx.
func StartChain(ctx context.Context, e types.RuleEngine, msg types.RuleMsg, o ChainRunOptions) *ChainRun {
	r := NewChainRun(ctx, e, o)
	r.Start(msg)
	return r
}

// NewChainRun prepares a run of engine e under ctx, for a caller that must
// hold the run before it starts (Start).
func NewChainRun(ctx context.Context, e types.RuleEngine, o ChainRunOptions) *ChainRun {
	r := &ChainRun{engine: e, onDone: o.OnDone, done: make(chan struct{}), gate: &gate{}}
	// The run's context derives from the caller's, never from a fresh
	// one: what the caller's context carries (a calling run's tool-policy
	// restrictions, its ledger, an approver) reaches every node.
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	cctx := r.ctx
	if o.Sink != nil {
		r.gate.next = o.Sink
		cctx = events.WithSink(cctx, r.gate)
	}
	if o.Steps != nil {
		chainID := o.ChainID
		if chainID == "" {
			chainID = e.Definition().RuleChain.ID
		}
		rec := &stepRecorder{sink: &gate{next: o.Steps, shut: r.gate}, toolCallID: o.ToolCallID, chainID: chainID, names: nodeNames(e)}
		cctx = withSteps(cctx, rec)
	}
	// The run's nodes report their pauses to this run, and resume only
	// this run's suspension (never one of a run above it).
	cctx = context.WithValue(cctx, pausesKey{}, &r.pauses)
	var mark *resumeMark
	opts := slices.Clip(o.Options)
	if o.Resume != nil {
		mark = &resumeMark{s: o.Resume}
		opts = append(opts, types.WithStartNode(o.Resume.NodeID))
	}
	cctx = context.WithValue(cctx, resumeKey{}, mark)
	if o.RunContext {
		cctx = WithRunContext(cctx)
	}
	r.opts = append(opts, types.WithContext(cctx), types.WithOnEnd(r.end))
	return r
}

// StartPoint is a node the chain is entered at, with the message it is
// given: a node that asked a question which is answered later (see
// ask.ErrPending) is entered again with the message it had received.
type StartPoint struct {
	NodeID string
	Msg    types.RuleMsg
}

// AskedNode is a node whose question waits for a later answer: it ended
// with an *ask.PendingError, and the run goes on by entering the chain at
// it again (StartAt) once the answer is in.
type AskedNode struct {
	StartPoint
	Question ask.Question
}

// Start sends msg into the chain; call it (or StartAt) once.
func (r *ChainRun) Start(msg types.RuleMsg) { r.start(msg, nil, r.finish) }

// StartAt enters the chain at each point (types.WithStartNode), at once:
// the run ends when every one of them has ended. Call it (or Start) once,
// with at least one point.
func (r *ChainRun) StartAt(points []StartPoint) {
	if len(points) == 1 {
		r.start(points[0].Msg, []types.RuleContextOption{types.WithStartNode(points[0].NodeID)}, r.finish)
		return
	}
	var left atomic.Int32
	left.Store(int32(len(points)))
	done := func() {
		if left.Add(-1) == 0 {
			r.finish()
		}
	}
	for _, p := range points {
		r.start(p.Msg, []types.RuleContextOption{types.WithStartNode(p.NodeID)}, done)
	}
}

func (r *ChainRun) start(msg types.RuleMsg, extra []types.RuleContextOption, finish func()) {
	e, opts := r.engine, append(slices.Clip(r.opts), extra...)
	if !e.Initialized() {
		// RuleGo ends such a message with OnEnd only.
		go func() {
			e.OnMsgAndWait(msg, opts...)
			finish()
		}()
		return
	}
	// The engine's shutdown (a redeploy's grace period over, the server
	// stopping) cancels the run; AfterFunc on RuleGo's std shutdown
	// context costs no goroutine.
	if sd, ok := e.(interface{ GetShutdownContext() context.Context }); ok && sd.GetShutdownContext() != nil && r.unwatch == nil {
		shutdown := sd.GetShutdownContext()
		r.unwatch = context.AfterFunc(shutdown, func() { r.cancel(context.Cause(shutdown)) })
	}
	// No goroutine waits for the chain: RuleGo runs its nodes on its pool
	// and calls finish when the last one is done (or at once when it
	// refuses the message).
	e.OnMsg(msg, append(opts, types.WithOnAllNodeCompleted(finish))...)
}

func nodeNames(e types.RuleEngine) map[string]string {
	names := map[string]string{}
	for _, n := range e.Definition().Metadata.Nodes {
		names[n.Id] = n.Name
	}
	return names
}

// Context is the run's context: cancelled by Cancel and Stop, by the
// caller's context, and by the engine's shutdown.
func (r *ChainRun) Context() context.Context { return r.ctx }

// Done is closed when the chain has ended and Ends are final.
func (r *ChainRun) Done() <-chan struct{} { return r.done }

// Cancel cancels the run with cause, without waiting.
func (r *ChainRun) Cancel(cause error) { r.cancel(cause) }

// Stop cancels the run with cause, waits up to CancelGrace for it to end,
// and closes the gate: nothing of the run reaches the caller's sinks any
// more. It reports whether the run ended in time.
func (r *ChainRun) Stop(cause error) bool {
	r.cancel(cause)
	t := time.NewTimer(CancelGrace)
	defer t.Stop()
	ended := true
	select {
	case <-r.done:
	case <-t.C:
		ended = false
	}
	r.gate.close()
	return ended
}

// Wait waits until the run ends, or ctx ends: then the run is stopped
// (Stop, with ctx's cause) and ctx's error returned.
func (r *ChainRun) Wait(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		r.Stop(context.Cause(ctx))
		return ctx.Err()
	}
}

// Cancelled reports whether the run's context ended (cancelled, timed
// out, shut down), and why.
func (r *ChainRun) Cancelled() (bool, error) {
	if r.ctx.Err() == nil {
		return false, nil
	}
	return true, context.Cause(r.ctx)
}

// ErrStillRunning is the cause of a run stopped after CancelGrace without
// having ended: a node ignores cancellation.
var ErrStillRunning = errors.New("the chain had not stopped " + CancelGrace.String() + " after it was cancelled")

func (r *ChainRun) end(rc types.RuleContext, m types.RuleMsg, err error, rel string) {
	if rel == types.Stream || rel == RelSuspended {
		return
	}
	r.mu.Lock()
	r.ends = append(r.ends, ChainEnd{NodeID: rc.GetSelfId(), Msg: m, Err: err, Relation: rel})
	r.mu.Unlock()
}

func (r *ChainRun) finish() {
	r.once.Do(func() {
		if r.unwatch != nil {
			r.unwatch()
		}
		r.sortEnds()
		if r.onDone != nil {
			r.onDone(r)
		}
		// The run's resources go; its context's cancellation reaches no
		// one any more.
		r.cancel(nil)
		close(r.done)
	})
}

// sortEnds puts the ends in the order of their nodes in the definition.
func (r *ChainRun) sortEnds() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ends) < 2 {
		return
	}
	order := map[string]int{}
	for i, n := range r.engine.Definition().Metadata.Nodes {
		order[n.Id] = i
	}
	rank := func(id string) int {
		if i, ok := order[id]; ok {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(r.ends, func(a, b ChainEnd) int { return rank(a.NodeID) - rank(b.NodeID) })
}

// Ends returns the chain's ends (see ChainRun); final once Done is closed.
func (r *ChainRun) Ends() []ChainEnd {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ends)
}

// gate passes events on until it, or the gate it shuts with, is closed.
// Close waits for events being passed on, so nothing passes after it.
type gate struct {
	next   events.Sink
	shut   *gate // closing shut closes this one too (nil: itself)
	mu     sync.RWMutex
	closed bool
}

// Emit implements events.Sink.
func (g *gate) Emit(e events.Event) {
	c := g.control()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.closed {
		g.next.Emit(e)
	}
}

// ReserveStep passes step names on to a sink that reserves them.
func (g *gate) ReserveStep(base string) string {
	if n, ok := g.next.(events.StepNamer); ok {
		return n.ReserveStep(base)
	}
	return base
}

func (g *gate) control() *gate {
	if g.shut != nil {
		return g.shut
	}
	return g
}

func (g *gate) close() {
	c := g.control()
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}
