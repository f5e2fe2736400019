package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// A paused run is a checkpoint, not a goroutine. When a run's calls wait
// for a person (interrupts) and its chain has ended (components:
// ChainRun.Suspended), pause saves what the run needs to go on in the
// store's checkpoint.Store, held by no replica, with an expiry that
// follows its interrupts' expiresAt; the run leaves the registry, and its
// segment ends with RUN_FINISHED outcome interrupt. Nothing of it is left
// in the process but a timer for its expiry.
//
// An answer, on this process or another one on the same store, claims the
// checkpoint (one answer wins), deletes it, and goes on with the run
// (resume.go). An interrupt nobody answered in time is a denial: at its
// expiry the timer claims the checkpoint and goes on with the run
// without a client, as a person's denial would have.

// pauseGrace is how long a checkpoint outlives its last interrupt's
// expiry: time for the expiry's continuation to claim it.
const pauseGrace = time.Minute

// storeTimeout bounds one operation on the checkpoint store.
const storeTimeout = 10 * time.Second

// codeNotPaused is the error code of a run that paused and could not be
// saved (or paused in two agent nodes at once).
const codeNotPaused = "pause_failed"

// pause saves the paused run as a checkpoint and makes res its pause; it
// reports whether it did. A run that cannot be saved fails: its
// interrupts could never be answered.
func (st *runState) pause(susp *components.Suspension, res *RunResult) bool {
	if err := st.save(susp, res); err != nil {
		res.Outcome, res.ErrorCode = OutcomeError, codeNotPaused
		res.Error = "the run paused for a person's answer, and it could not be kept: " + err.Error()
		st.err = &RunFailure{Outcome: res.Outcome, Code: res.ErrorCode, Message: res.Error, Err: err}
		return false
	}
	return true
}

func (st *runState) save(susp *components.Suspension, res *RunResult) error {
	ids, err := susp.Interrupts()
	if err != nil {
		return err
	}
	run, err := json.Marshal(susp)
	if err != nil {
		return err
	}
	st.mu.Lock()
	pending := make([]checkpoint.Pending, 0, len(ids))
	for _, id := range ids {
		i := slices.IndexFunc(st.raised, func(p checkpoint.Pending) bool { return p.Interrupt.ID == id })
		if i < 0 {
			st.mu.Unlock()
			return fmt.Errorf("the run waits for interrupt %s, which it did not raise", id)
		}
		pending = append(pending, st.raised[i])
	}
	var suspended, held []events.Event
	if st.seg != nil {
		// What the pause closes in the client's stream, opened again in
		// the next segment.
		suspended = st.seg.stream.Opened()
	} else {
		suspended, held = st.reopen, st.held
	}
	st.mu.Unlock()
	req := st.req
	state := &checkpoint.State{Version: checkpoint.FormatVersion, RunID: req.RunID, ThreadID: req.ThreadID, ChainID: req.ChainID,
		NodeID: susp.NodeID, Source: req.Source, Owner: req.Owner, NewThread: req.NewThread, Caller: storedCaller(req.Caller),
		Run: run, Pending: pending, Always: st.s.interrupts.memory().export(st.alwaysScope()), Usage: storedUsage(st.ledger.Snapshot()),
		Suspended: checkpoint.Events(suspended), Held: checkpoint.Events(held), StartedAt: st.started, PausedAt: time.Now().UTC()}
	state.Traceparent, state.Tracestate = st.span.Traceparent()
	data, err := checkpoint.Encode(state)
	if err != nil {
		return err
	}
	first, last := expiries(pending)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	cp := &checkpoint.Checkpoint{RunID: req.RunID, Data: data, ThreadID: req.ThreadID, Owner: req.Owner, Expires: last.Add(pauseGrace)}
	logged := st.lg != nil || st.rec.keepsLog()
	if logged {
		// Held by this process until the pause's events are stored
		// (handOverLocked): nobody goes on with the run, and writes its
		// log, before them.
		cp.Holder = st.s.replica
	}
	if err := st.s.checkpoints.Save(ctx, cp); err != nil {
		return err
	}
	if logged {
		st.mu.Lock()
		st.hold = cp.Fence
		st.mu.Unlock()
	}
	st.s.expiry.schedule(req.RunID, first)
	res.Outcome = OutcomeInterrupt
	res.Interrupts = make([]events.Interrupt, len(pending))
	for i, p := range pending {
		res.Interrupts[i] = p.Interrupt
	}
	return nil
}

// expiries are the first and the last expiry of pending interrupts.
func expiries(pending []checkpoint.Pending) (first, last time.Time) {
	for i, p := range pending {
		if i == 0 || p.Expires.Before(first) {
			first = p.Expires
		}
		if p.Expires.After(last) {
			last = p.Expires
		}
	}
	return first, last
}

func storedCaller(c *agent.Caller) *checkpoint.Caller {
	if c == nil {
		return nil
	}
	out := &checkpoint.Caller{State: c.State}
	for _, t := range c.Tools {
		out.Tools = append(out.Tools, checkpoint.CallerTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	for _, e := range c.Context {
		out.Context = append(out.Context, checkpoint.CallerContext{Description: e.Description, Value: e.Value})
	}
	return out
}

func callerOf(c *checkpoint.Caller) *agent.Caller {
	if c == nil {
		return nil
	}
	out := &agent.Caller{State: c.State}
	for _, t := range c.Tools {
		out.Tools = append(out.Tools, agent.ClientTool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	for _, e := range c.Context {
		out.Context = append(out.Context, agent.ContextEntry{Description: e.Description, Value: e.Value})
	}
	return out
}

// storedUsage is a ledger's usage as a checkpoint keeps it (per provider
// and model, the total as the providers reported it).
func storedUsage(entries []agent.LedgerEntry) []events.TokenUsage {
	out := make([]events.TokenUsage, len(entries))
	for i, e := range entries {
		out[i] = events.TokenUsage{Provider: e.Provider, Model: e.Model, InputTokens: e.Usage.PromptTokens, OutputTokens: e.Usage.CompletionTokens,
			TotalTokens: e.Usage.TotalTokens, ReasoningTokens: e.Usage.ReasoningTokens, CachedInputTokens: e.Usage.CachedTokens}
	}
	return out
}

func ledgerEntries(usage []events.TokenUsage) []agent.LedgerEntry {
	out := make([]agent.LedgerEntry, len(usage))
	for i, u := range usage {
		out[i] = agent.LedgerEntry{Provider: u.Provider, Model: u.Model}
		out[i].Usage.PromptTokens, out[i].Usage.CompletionTokens, out[i].Usage.TotalTokens = u.InputTokens, u.OutputTokens, u.TotalTokens
		out[i].Usage.ReasoningTokens, out[i].Usage.CachedTokens = u.ReasoningTokens, u.CachedInputTokens
	}
	return out
}

// expiryTimers go on with the paused runs whose interrupts expire: one
// timer per checkpoint this process saved or found when it started.
type expiryTimers struct {
	fire func(runID string)

	mu     sync.Mutex
	timers map[string]*time.Timer
	closed bool
}

// schedule (re)sets run runID's timer to at.
func (x *expiryTimers) schedule(runID string, at time.Time) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return
	}
	if t, ok := x.timers[runID]; ok {
		t.Stop()
	}
	if x.timers == nil {
		x.timers = map[string]*time.Timer{}
	}
	x.timers[runID] = time.AfterFunc(time.Until(at), func() {
		x.mu.Lock()
		delete(x.timers, runID)
		closed := x.closed
		x.mu.Unlock()
		if !closed {
			x.fire(runID)
		}
	})
}

// stop forgets run runID's timer (its checkpoint was claimed).
func (x *expiryTimers) stop(runID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t, ok := x.timers[runID]; ok {
		t.Stop()
		delete(x.timers, runID)
	}
}

// close stops every timer: the checkpoints stay, for the next process.
func (x *expiryTimers) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.closed = true
	for _, t := range x.timers {
		t.Stop()
	}
	x.timers = nil
}

// watchExpiries schedules the expiry of every checkpoint in the store: a
// process that starts takes on the pauses of the one before it.
func (s *Store) watchExpiries(ctx context.Context) error {
	list, err := s.checkpoints.List(ctx)
	if err != nil {
		return err
	}
	for _, c := range list {
		cp, err := s.checkpoints.Load(ctx, c.RunID)
		if err != nil || mcpserve.IsInputPause(cp.Data) {
			// An MCP call's input pause expires with its checkpoint.
			continue
		}
		if state, err := checkpoint.Decode(cp.Data); err == nil {
			first, _ := expiries(state.Pending)
			s.expiry.schedule(c.RunID, first)
		} else {
			s.log.Warn("a paused run cannot be resumed by this version: it will expire", "run", c.RunID, "err", err)
		}
	}
	return nil
}

// expire goes on with paused run runID, whose first interrupts expired:
// nobody's answer is a denial. Interrupts that have not expired yet wait
// again (the run pauses again on them).
func (s *Store) expire(runID string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	cp, err := s.checkpoints.Load(ctx, runID)
	if err != nil {
		return // answered, cancelled, or gone
	}
	state, err := checkpoint.Decode(cp.Data)
	if err != nil {
		return
	}
	now := time.Now()
	answers := map[string]answer{}
	var expired []string
	for _, p := range state.Pending {
		if !now.Before(p.Expires) {
			answers[p.Interrupt.ID] = timedOut(&p)
			expired = append(expired, p.Interrupt.ID)
		}
	}
	if len(answers) == 0 {
		first, _ := expiries(state.Pending)
		s.expiry.schedule(runID, first)
		return
	}
	r, err := s.take(ctx, cp, state, answers)
	if err != nil {
		if !errors.Is(err, ErrResume) {
			s.log.Warn("a paused run whose interrupts expired could not go on", "run", runID, "err", err)
		}
		return
	}
	r.expired = expired
	if _, err := s.goOn(context.Background(), r, nil, "", ""); err != nil {
		s.log.Warn("a paused run whose interrupts expired could not go on", "run", runID, "err", err)
	}
}

// timedOut is the answer nobody gave to p in time: a denial.
func timedOut(p *checkpoint.Pending) answer {
	return answer{decision: denial(fmt.Sprintf("nobody answered within %s", p.Timeout))}
}

// releaseRetry is how often a pause whose release failed is tried again.
const releaseRetry = time.Second

// heldPauses are the checkpoints this process saved held (see
// handOverLocked) and could not release yet, the store not answering:
// each is tried again every releaseRetry until it is released or gone, or
// the store closes (a checkpoint held by a process that is gone is free).
type heldPauses struct {
	mu     sync.Mutex
	fences map[string]uint64 // by run id
	timers expiryTimers
}

// releasePause hands paused run runID's checkpoint, held by this process
// with fence, to the fleet; should the store not answer, it is tried
// again until it does.
func (s *Store) releasePause(ctx context.Context, runID string, fence uint64) {
	err := s.checkpoints.Release(ctx, runID, fence)
	if err == nil || errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, checkpoint.ErrFenced) {
		return
	}
	s.log.Warn("the paused run is not handed to the fleet yet: it can be answered once the checkpoint store answers",
		"run", runID, "err", err)
	h := &s.held
	h.mu.Lock()
	if h.fences == nil {
		h.fences = map[string]uint64{}
	}
	h.fences[runID] = fence
	h.mu.Unlock()
	h.timers.schedule(runID, time.Now().Add(releaseRetry))
}

// retryRelease tries again to release paused run runID's checkpoint.
func (s *Store) retryRelease(runID string) {
	h := &s.held
	h.mu.Lock()
	fence, ok := h.fences[runID]
	delete(h.fences, runID)
	h.mu.Unlock()
	if ok {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		s.releasePause(ctx, runID, fence)
	}
}
