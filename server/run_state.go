package server

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
)

// errClientGone cancels a run whose client went away.
var errClientGone = errors.New("the client went away")

// maxDetachedEvents bounds the events kept for the next segment while a
// paused run has no client (other tool calls of its turn go on).
const maxDetachedEvents = 10000

// runState is one run of a chain from start to end. Its events reach
// clients in segments: the request that started it is the first; a run
// that pauses for a person (an interrupt) ends its segment with
// RUN_FINISHED outcome interrupt, goes on waiting without a client, and
// the request that answers (Store.Resume) opens the next segment. Each
// segment is a complete AG-UI run of its own.
type runState struct {
	s      *Store
	req    RunRequest
	reg    *runs.Run
	fr     *frame
	ledger *agent.Ledger
	// run is the chain's run: components.StartChain, as chain tools run
	// theirs, so cancellation, ends and silencing are the same.
	run     *components.ChainRun
	started time.Time
	// span is the run's invoke_agent span (zero with tracing off).
	span telemetry.Run

	// done is closed when the chain has ended and res, err are final.
	done chan struct{}
	res  RunResult
	err  error

	mu      sync.Mutex
	seg     *segment       // the attached segment; nil while paused
	held    []events.Event // events while paused, for the next segment
	reopen  []events.Event // what the pause suspended (steps, sub-agents), opened again in the next segment
	raised  []*interrupt   // interrupts not yet told to a client
	open    map[string]*interrupt
	dropped int

	// usage records the run in the store's usage ledger (nil: none).
	usage *ledger.Run
}

// segment is one client's share of a run.
type segment struct {
	stream *events.Stream
	// base is the run's usage when the segment opened: a segment reports
	// only the model calls made during it (AG-UI: usage does not carry
	// across an interrupt).
	base []events.TokenUsage
	// ended receives the interrupts the segment ended on.
	ended    chan []events.Interrupt
	flushing bool
}

// startRun registers a run and starts its chain; the caller then attaches
// the first segment.
func (s *Store) startRun(ctx context.Context, e types.RuleEngine, req RunRequest) (*runState, error) {
	st := &runState{s: s, req: req, fr: &frame{}, ledger: agent.NewLedger(nil), started: time.Now(),
		done: make(chan struct{}), open: map[string]*interrupt{}}
	st.res = RunResult{RunID: req.RunID, ThreadID: req.ThreadID}
	st.ledger, st.usage = s.usageLedger(req)
	// The run outlives the request that started it only by pausing:
	// segment() cancels it when a client goes away mid-segment.
	reg, rctx, err := s.runs.Start(context.WithoutCancel(ctx), runs.Info{RunID: req.RunID, ThreadID: req.ThreadID,
		ChainID: req.ChainID, Source: req.Source, User: req.Owner}, st)
	if err != nil {
		return nil, err
	}
	st.reg, st.fr.out = reg, reg
	metrics.ActiveRuns.Inc()
	rctx, st.span = startSpan(rctx, e, req)
	rctx = agent.WithLedger(rctx, st.ledger)
	if req.Caller != nil {
		rctx = agent.WithCaller(rctx, req.Caller)
	}
	if req.Interruptible {
		rctx = tools.WithApprover(rctx, st)
	}
	var opts []types.RuleContextOption
	if watched := s.live.Watching(req.ChainID); watched || req.OnNode != nil {
		if watched {
			opts = append(opts, types.WithDebugMode(true))
		}
		opts = append(opts, types.WithOnNodeCompleted(s.nodeDone(req.ChainID, req.RunID, req.OnNode)))
	}
	if s.live.Clients() > 0 {
		// Chains the run calls as tools report their nodes too.
		rctx = components.WithTrace(rctx)
	}
	// The agent nodes use the run's context as it is (RunContext): the
	// registry cancels it, and the engine's shutdown does.
	st.run = components.NewChainRun(rctx, e, components.ChainRunOptions{Sink: st.fr, RunContext: true,
		Options: opts, OnDone: st.finish})
	st.run.Start(s.newMessage(req))
	return st, nil
}

// segment attaches a client's sink to the run (as AG-UI run threadID,
// runID) and waits until the run ends or pauses, or ctx ends (the client
// went away: the run is cancelled).
func (st *runState) segment(ctx context.Context, sink events.Sink, threadID, runID string) (RunResult, error) {
	return st.wait(ctx, st.attach(sink, threadID, runID, nil))
}

// wait waits for the end of segment seg: the run's end, a pause, or the
// client going away (which cancels the run).
func (st *runState) wait(ctx context.Context, seg *segment) (RunResult, error) {
	// A segment reports only the model calls made during it (AG-UI: usage
	// does not carry across an interrupt), as its terminal event does.
	select {
	case <-st.done:
		return st.result(seg), st.err
	case ins := <-seg.ended:
		res := RunResult{RunID: st.req.RunID, ThreadID: st.req.ThreadID, Outcome: OutcomeInterrupt, Interrupts: ins,
			Usage: usageSince(st.ledger.Entries(), seg.base)}
		return res, nil
	case <-ctx.Done():
		// The client went away: the run is cancelled, and waited for as a
		// chain tool's is, at most components.CancelGrace.
		st.reg.Cancel(errClientGone)
		if st.run.Stop(errClientGone) {
			<-st.done
			return st.result(seg), st.err
		}
		// A node ignores cancellation: the segment ends now, cancelled,
		// and nothing the run still does reaches its client.
		msg := "the run was cancelled: " + errClientGone.Error() + " (" + components.ErrStillRunning.Error() + ")"
		res := RunResult{RunID: st.req.RunID, ThreadID: st.req.ThreadID, Outcome: OutcomeCancelled, ErrorCode: agent.CodeCancelled,
			Error: msg, Usage: usageSince(st.ledger.Entries(), seg.base)}
		st.detach(seg, res.Usage)
		return res, &RunFailure{Outcome: OutcomeCancelled, Code: agent.CodeCancelled, Message: msg, Err: components.ErrStillRunning}
	}
}

// detach ends segment seg cancelled, unless the run ended it meanwhile,
// and takes its client off the run: what the run still does is never
// sent to it.
func (st *runState) detach(seg *segment, usage []events.TokenUsage) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seg != seg {
		return
	}
	term := events.Event{Type: events.RunFinished, Outcome: events.OutcomeCancelled, Usage: usage,
		Meta: events.Meta{DurationMs: time.Since(st.started).Milliseconds()}}
	st.withCost(&term.Meta)
	seg.stream.Emit(term)
	st.seg = nil
}

// result is the run's result as segment seg reports it.
func (st *runState) result(seg *segment) RunResult {
	res := st.res
	res.Usage = usageSince(res.Usage, seg.base)
	return res
}

// attach opens a segment: RUN_STARTED, then what happened while the run
// was paused, then the answers (deliver) reach the waiting calls, in that
// order, so nothing the client should see is lost or reordered.
func (st *runState) attach(sink events.Sink, threadID, runID string, deliver func()) *segment {
	if sink == nil {
		sink = events.Discard
	}
	seg := &segment{ended: make(chan []events.Interrupt, 1), base: st.ledger.Entries()}
	st.usage.Segment(runID)
	chainID, regID := st.req.ChainID, st.req.RunID
	seg.stream = events.NewStream(events.SinkFunc(func(ev events.Event) {
		if !seg.flushing {
			st.s.live.Event(chainID, regID, &ev)
		}
		sink.Emit(ev)
	}), threadID, runID)
	st.mu.Lock()
	defer st.mu.Unlock()
	seg.stream.Emit(events.Event{Type: events.RunStarted, ProtocolVersion: events.ProtocolVersion})
	// The steps and sub-agents the pause suspended go on in this run.
	seg.stream.Reopen(st.reopen)
	st.reopen = nil
	seg.flushing = true
	for _, ev := range st.held {
		seg.stream.Emit(ev)
	}
	seg.flushing = false
	st.held = nil
	st.seg = seg
	select {
	case <-st.done:
		// The run ended while paused: its end is this segment's end.
		st.emitTerminalLocked()
		return seg
	default:
	}
	if deliver != nil {
		deliver()
	}
	if len(st.raised) > 0 {
		st.pauseLocked()
	}
	return seg
}

// Emit implements events.Sink: the run's events, after the registry has
// counted them, go to the attached segment, or are held while paused.
func (st *runState) Emit(e events.Event) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seg != nil {
		st.seg.stream.Emit(e)
		return
	}
	st.s.live.Event(st.req.ChainID, st.req.RunID, &e)
	if len(st.held) < maxDetachedEvents {
		st.held = append(st.held, e)
	} else {
		st.dropped++
	}
}

// pauseLocked ends the attached segment on the raised interrupts.
func (st *runState) pauseLocked() {
	ins := make([]events.Interrupt, 0, len(st.raised))
	for _, in := range st.raised {
		st.open[in.ev.ID] = in
		ins = append(ins, in.ev)
	}
	st.raised = nil
	if st.seg == nil {
		return
	}
	term := events.Event{Type: events.RunFinished, Outcome: events.OutcomeInterrupt, Interrupts: ins,
		Usage: usageSince(st.ledger.Entries(), st.seg.base)}
	st.withCost(&term.Meta)
	st.seg.stream.Emit(term)
	st.reopen = st.seg.stream.Suspended()
	st.seg.ended <- ins
	st.seg = nil
	st.reg.SetInterrupts(st.openList())
}

// finish runs when the chain has ended: it decides the outcome and ends
// the attached segment (or keeps the end for the next one).
// It is given the run: a chain may end before StartChain has returned.
func (st *runState) finish(run *components.ChainRun) {
	res := &st.res
	res.Usage = st.ledger.Entries()
	if st.req.Caller != nil {
		res.Pending = st.req.Caller.Pending()
	}
	ends := run.Ends()
	st.fr.finish(run, ends, res)
	if res.Outcome != OutcomeSuccess {
		st.err = &RunFailure{Outcome: res.Outcome, Code: res.ErrorCode, Message: res.Error, Err: st.fr.cause(run, ends)}
	}
	st.s.runs.End(st.reg)
	endSpan(st.span, res)
	// Counted and logged before the client hears the end: a client that
	// has its answer then finds the run in /metrics.
	req, took := st.req, time.Since(st.started)
	info := st.reg.Info()
	st.s.log.Info("run", "run", req.RunID, "thread", req.ThreadID, "chain", req.ChainID, "source", cmp.Or(req.Source, "api"),
		"outcome", res.Outcome, "duration", took.Round(time.Millisecond), "toolCalls", info.ToolCalls, "tokens", info.Usage.TotalTokens)
	metrics.ActiveRuns.Dec()
	metrics.ChainRuns.WithLabelValues(req.ChainID, cmp.Or(req.Source, "api"), res.Outcome).Inc()
	metrics.ChainRunDuration.WithLabelValues(req.ChainID).Observe(took.Seconds())
	st.mu.Lock()
	if st.seg != nil {
		st.emitTerminalLocked()
	}
	close(st.done)
	st.mu.Unlock()
}

// emitTerminalLocked ends the attached segment with the run's end.
func (st *runState) emitTerminalLocked() {
	res := &st.res
	usage := usageSince(res.Usage, st.seg.base)
	term := events.Event{Type: events.RunFinished, Usage: usage, Meta: st.fr.meta}
	switch res.Outcome {
	case OutcomeCancelled:
		term.Outcome, term.Result, term.Meta = events.OutcomeCancelled, nil, events.Meta{}
	case OutcomeError:
		term = events.Event{Type: events.RunError, Message: res.Error, Code: res.ErrorCode, Usage: usage}
	default:
		term.Result = resultJSON(res.Msg)
		for _, c := range res.Pending {
			term.PendingToolCallIDs = append(term.PendingToolCallIDs, c.ID)
		}
	}
	term.Meta.DurationMs = time.Since(st.started).Milliseconds()
	st.withCost(&term.Meta)
	st.seg.stream.Emit(term)
	st.seg = nil
}

// usageSince is now minus base, entry by entry (provider and model);
// entries with nothing left are dropped.
func usageSince(now, base []events.TokenUsage) []events.TokenUsage {
	if len(base) == 0 {
		return now
	}
	var out []events.TokenUsage
	for _, u := range now {
		for _, b := range base {
			if b.Provider == u.Provider && b.Model == u.Model {
				u.InputTokens -= b.InputTokens
				u.OutputTokens -= b.OutputTokens
				u.TotalTokens -= b.TotalTokens
				u.ReasoningTokens -= b.ReasoningTokens
				u.CachedInputTokens -= b.CachedInputTokens
			}
		}
		if u.InputTokens > 0 || u.OutputTokens > 0 {
			out = append(out, u)
		}
	}
	return out
}
