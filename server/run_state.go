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
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// errClientGone cancels a run whose client went away.
var errClientGone = errors.New("the client went away")

// maxDetachedEvents bounds the events kept for the next segment while a
// run has no client (it went on after an interrupt expired).
const maxDetachedEvents = 10000

// runState is one run of a chain in this process, from its start (or its
// resumption from a checkpoint) to its end or its pause. Its events reach
// clients in segments, each a complete AG-UI run of its own: the request
// that started the run is the first; a run that pauses for a person (an
// interrupt) is saved as a checkpoint and ends its segment with
// RUN_FINISHED outcome interrupt; the request that answers (Store.Resume)
// claims the checkpoint, goes on with the run in a runState of its own,
// and is its next segment.
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
	// resumed is the checkpoint the run goes on from (nil for a new run),
	// and answers decide the interrupts it waited for.
	resumed *checkpoint.State
	answers map[string]answer
	// entries and expired are how the answers came (see resumption).
	entries []ResumeEntry
	expired []string

	// done is closed when the chain has ended or paused and res, err are
	// final.
	done chan struct{}
	res  RunResult
	err  error

	mu      sync.Mutex
	seg     *segment             // the attached segment; nil without a client
	held    []events.Event       // events no client saw, for the next segment
	reopen  []events.Event       // what the last pause suspended (steps, sub-agents), opened again in the next segment
	raised  []checkpoint.Pending // the interrupts its calls wait for
	dropped int

	// usage records the run in the store's usage ledger (nil: none).
	usage *ledger.Run
	// lg is the run's event log (nil: none; see run_log.go).
	lg *runLog
	// hold is the fence of the checkpoint a pause saved held by this
	// process (0: none), until handOverLocked releases it; handedOver
	// says the pause's log and checkpoint were handed over.
	hold       uint64
	handedOver bool
	// terminated says the run's terminal event was emitted (its end, not
	// a pause).
	terminated bool
	// rec keeps the run for the editor, replays and forks (nil: none).
	rec *runRecorder
}

// segment is one client's share of a run.
type segment struct {
	stream *events.Stream
	// client is where its events go (events.Discard once the client left).
	client events.Sink
	// base is the run's usage when the segment opened: a segment reports
	// only the model calls made during it (AG-UI: usage does not carry
	// across an interrupt).
	base     []events.TokenUsage
	flushing bool
}

// prepare registers a run of engine e and makes its chain run, not
// started yet: the caller attaches its segment first, so that nothing the
// run emits happens before RUN_STARTED. resume is the paused chain run it
// goes on from (nil: a new run).
func (s *Store) prepare(ctx context.Context, e types.RuleEngine, st *runState, resume *components.Suspension) error {
	req := st.req
	if err := s.startLog(ctx, st); err != nil {
		return err
	}
	// The run outlives the request that started it only by pausing, or
	// for the rejoin grace: segment() cancels it when a client goes away
	// mid-segment.
	reg, rctx, err := s.runs.Start(context.WithoutCancel(ctx), runs.Info{RunID: req.RunID, ThreadID: req.ThreadID,
		ChainID: req.ChainID, Source: req.Source, User: req.Owner, StartedAt: st.started}, st)
	if err != nil {
		st.abandonLog()
		return err
	}
	st.reg, st.fr.out = reg, reg
	metrics.ActiveRuns.Inc()
	rctx, st.span = startSpan(rctx, e, req, st.resumed)
	rctx, st.rec = s.recordRun(ctx, rctx, st)
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
		Options: opts, OnDone: st.finish, Resume: resume})
	return nil
}

func newRunState(s *Store, req RunRequest) *runState {
	st := &runState{s: s, req: req, fr: &frame{}, started: time.Now(), done: make(chan struct{})}
	st.res = RunResult{RunID: req.RunID, ThreadID: req.ThreadID}
	st.ledger, st.usage = s.usageLedger(req)
	return st
}

// wait waits for the end of segment seg: the run's end or pause, or the
// client going away (which cancels the run).
func (st *runState) wait(ctx context.Context, seg *segment) (RunResult, error) {
	select {
	case <-st.done:
		return st.result(seg), st.err
	case <-ctx.Done():
		if st.leave(seg) {
			// It goes on for its client to rejoin (run_rejoin.go).
			return RunResult{RunID: st.req.RunID, ThreadID: st.req.ThreadID}, errClientLeft
		}
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
		res.Cost, res.Currency = st.detach(seg, res.Usage)
		return res, &RunFailure{Outcome: OutcomeCancelled, Code: agent.CodeCancelled, Message: msg, Err: components.ErrStillRunning}
	}
}

// detach ends segment seg cancelled, unless the run ended it meanwhile,
// and takes its client off the run: what the run still does is never
// sent to it. It returns the segment's cost, as its terminal event says.
func (st *runState) detach(seg *segment, usage []events.TokenUsage) (cost, currency string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seg != seg {
		return "", ""
	}
	term := events.Event{Type: events.RunFinished, Outcome: events.OutcomeCancelled, Usage: usage,
		Meta: events.Meta{DurationMs: time.Since(st.started).Milliseconds()}}
	st.withCost(&term.Meta)
	seg.stream.Emit(term)
	st.seg = nil
	st.terminated = true
	st.logEndLocked(OutcomeCancelled)
	return term.Meta.Cost, term.Meta.Currency
}

// result is the run's result as segment seg reports it: usage spent
// during the segment only.
func (st *runState) result(seg *segment) RunResult {
	res := st.res
	res.Usage = usageSince(res.Usage, seg.base)
	return res
}

// attach opens a segment, before the run goes on: RUN_STARTED, then what
// the last pause suspended, then what happened while no client was
// attached, so nothing the client should see is lost or reordered.
func (st *runState) attach(sink events.Sink, threadID, runID string) *segment {
	if sink == nil {
		sink = events.Discard
	}
	seg := &segment{base: st.ledger.Entries(), client: sink}
	st.usage.Segment(runID)
	chainID, regID, rec := st.req.ChainID, st.req.RunID, st.rec
	// Every event of the run is emitted under st.mu: the log (which gives
	// the event its id), the record and the client see them in one order.
	// A pause is handed over (handOverLocked) once the log and the record
	// have its end, before the client hears of it.
	seg.stream = events.NewStream(events.SinkFunc(func(ev events.Event) {
		pause := st.logEvent(&ev)
		if rec != nil {
			rec.event(&ev)
		}
		if pause {
			st.handOverLocked()
		}
		if !seg.flushing {
			st.s.live.Event(chainID, regID, &ev)
		}
		seg.client.Emit(ev)
	}), threadID, runID)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.attachedLocked()
	seg.stream.Emit(events.Event{Type: events.RunStarted, ProtocolVersion: events.ProtocolVersion, ParentRunID: st.req.ParentRunID})
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
	return seg
}

// Emit implements events.Sink: the run's events, after the registry has
// counted them, go to the attached segment, or are held without one.
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

// finish runs when the chain has ended: a run whose agent paused is saved
// as a checkpoint (see pause); otherwise it decides the outcome. It ends
// the attached segment with the run's end or pause. It is given the run:
// a chain may end before StartChain has returned.
func (st *runState) finish(run *components.ChainRun) {
	res := &st.res
	res.Usage = st.ledger.Entries()
	susp, serr := run.Suspended()
	paused := false
	switch cancelled, _ := run.Cancelled(); {
	case susp != nil && !cancelled:
		paused = st.pause(susp, res)
	case serr != nil:
		res.Outcome, res.ErrorCode, res.Error = OutcomeError, codeNotPaused, serr.Error()
		st.err = &RunFailure{Outcome: res.Outcome, Code: res.ErrorCode, Message: res.Error, Err: serr}
	}
	if !paused && res.Outcome == "" {
		if st.req.Caller != nil {
			res.Pending = st.req.Caller.Pending()
		}
		ends := run.Ends()
		st.fr.finish(run, ends, res)
		if res.Outcome == OutcomeInterrupt {
			res.Asked = askedNodes(ends)
			if len(res.Asked) > 0 {
				res.Traceparent, res.Tracestate = st.span.Traceparent()
			}
		}
		if res.Outcome != OutcomeSuccess && res.Outcome != OutcomeInterrupt {
			st.err = &RunFailure{Outcome: res.Outcome, Code: res.ErrorCode, Message: res.Error, Err: st.fr.cause(run, ends)}
		}
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
	if !paused {
		// A paused run is counted when it ends.
		metrics.ChainRuns.WithLabelValues(req.ChainID, cmp.Or(req.Source, "api"), res.Outcome).Inc()
		metrics.ChainRunDuration.WithLabelValues(req.ChainID).Observe(took.Seconds())
	}
	if !paused {
		st.logTail()
	}
	// The record is waited for before anyone hears the run end.
	st.rec.ending()
	st.mu.Lock()
	if st.seg != nil {
		st.emitTerminalLocked()
	}
	if paused {
		st.logPauseLocked()
	} else {
		st.logEndLocked(res.Outcome)
	}
	// The record's write and the replay's pool's stop start before the
	// run's waiters go on: one that closes the store then waits for them.
	st.rec.end(res)
	if !paused {
		st.s.plays.ended(st.req.RunID)
	}
	close(st.done)
	st.mu.Unlock()
}

// emitTerminalLocked ends the attached segment with the run's end or
// pause.
func (st *runState) emitTerminalLocked() {
	res := &st.res
	usage := usageSince(res.Usage, st.seg.base)
	term := events.Event{Type: events.RunFinished, Usage: usage, Meta: st.fr.meta}
	switch res.Outcome {
	case OutcomeInterrupt:
		term = events.Event{Type: events.RunFinished, Outcome: events.OutcomeInterrupt, Interrupts: res.Interrupts, Usage: usage}
		st.withCost(&term.Meta)
		res.Cost, res.Currency = term.Meta.Cost, term.Meta.Currency
		st.seg.stream.Emit(term)
		st.seg = nil
		return
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
	res.Cost, res.Currency = term.Meta.Cost, term.Meta.Currency
	st.seg.stream.Emit(term)
	st.seg = nil
	st.terminated = true
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

// AskedNode is a node whose question waits for a later answer (see
// RunResult.Asked and components.AskedNode).
type AskedNode = components.AskedNode

// askedNodes are the ends of nodes whose question waits for a later
// answer (ask.ErrPending), with the points to enter the chain at again.
func askedNodes(ends []components.ChainEnd) []AskedNode {
	var out []AskedNode
	for _, e := range ends {
		var pe *ask.PendingError
		if errors.As(e.Err, &pe) {
			out = append(out, AskedNode{StartPoint: components.StartPoint{NodeID: e.NodeID, Msg: e.Msg}, Question: pe.Question})
		}
	}
	return out
}
