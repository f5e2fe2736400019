package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/control"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// RunLog is where a store keeps its runs' events, and how it reaches the
// other replicas of a fleet (StoreOptions.RunLog). Without Events, runs
// keep no events: their SSE frames carry no ids and nothing rejoins them.
type RunLog struct {
	// Events keeps each run's events with ids: its SSE streams send them
	// as `id:`, and GET /api/v1/runs/{id}/events rejoins it from any
	// replica (see package eventlog).
	Events eventlog.Log
	// Replica is this process's replica id: the owner of the runs it
	// starts, in their logs.
	Replica string
	// Alive tells whether a replica is alive (health.Registry.Alive): a
	// run that has not ended and whose owner is not is ended by the
	// janitor (RUN_ERROR, code replica_lost). Nil: only Replica is.
	Alive func(ctx context.Context, replica string) (bool, error)
	// Control reaches the replica that runs a run: cancel, its followers,
	// the fleet's runs listing. Nil: control.NewLocal(Replica).
	Control control.Bus
	// RejoinGrace is how long a run whose client went away goes on with
	// nobody following it before it is cancelled, for the client to come
	// back (DefaultRejoinGrace when 0; negative: cancelled at once, as
	// without a log). It applies to the runs of the run and AG-UI routes,
	// whose clients can rejoin.
	RejoinGrace time.Duration
	// ReapEvery is how often the janitor looks for runs of dead replicas
	// (DefaultReapEvery when 0).
	ReapEvery time.Duration
}

// The RunLog defaults.
const (
	DefaultRejoinGrace = 30 * time.Second
	DefaultReapEvery   = 2 * time.Second
)

// ErrRunExists refuses a run id that names a run already (in progress or
// finished, on any replica): a client rejoins it instead.
var ErrRunExists = errors.New("a run with this id exists (in progress or finished)")

// runLogs is a store's side of its runs' logs: the runs of this process
// that keep one, the control handlers, and the janitor.
type runLogs struct {
	RunLog
	s       *Store
	control *controlHandlers

	mu   sync.Mutex
	runs map[string]*runState // this process's runs with a log, by run id
	// (A run that paused is no longer here: its writer was detached, and
	// whoever goes on with it, here or elsewhere, continues its log.)

	stop chan struct{}
	wg   sync.WaitGroup
	// trouble is when the janitor last failed to read the store (Unix
	// ns).
	trouble atomic.Int64
}

// newRunLogs sets up o for store s; nil when o keeps no events.
func newRunLogs(s *Store, o RunLog) *runLogs {
	if o.Events == nil {
		return nil
	}
	if o.Replica == "" {
		o.Replica = "local"
	}
	if o.Alive == nil {
		self := o.Replica
		o.Alive = func(_ context.Context, id string) (bool, error) { return id == self, nil }
	}
	if o.Control == nil {
		o.Control = control.NewLocal(o.Replica, 0)
	}
	if o.RejoinGrace == 0 {
		o.RejoinGrace = DefaultRejoinGrace
	}
	if o.ReapEvery <= 0 {
		o.ReapEvery = DefaultReapEvery
	}
	rl := &runLogs{RunLog: o, s: s, runs: map[string]*runState{}, stop: make(chan struct{})}
	rl.control = newControlHandlers(rl)
	o.Control.Handle(rl.control.handle)
	rl.wg.Go(rl.janitor)
	return rl
}

// close stops the janitor. The log and the bus are the caller's to close,
// after the store.
func (rl *runLogs) close() {
	if rl == nil {
		return
	}
	close(rl.stop)
	rl.wg.Wait()
}

func (rl *runLogs) local(runID string) *runState {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.runs[runID]
}

// runLog is one run's log as its owner writes it. Its fields are guarded
// by the run's lock (runState.mu), under which every event of the run is
// emitted.
type runLog struct {
	w       eventlog.Writer
	buf     []byte
	waiting bool // the last segment ended on interrupts
	ended   bool

	// left is set when the run's client went away and the run goes on
	// for the rejoin grace; until followedUntil a follower keeps it.
	left          bool
	followedUntil time.Time
	timer         *time.Timer
}

// statusTimeout bounds a status change in the log: a pause waits for it,
// so that a follower that sees the pause's RUN_FINISHED finds the run
// waiting.
const statusTimeout = time.Second

// startLog opens run st's log as its owner. A run id with a log already is
// ErrRunExists; a log that cannot be opened (its store is down) leaves the
// run without one, and says so.
func (s *Store) startLog(ctx context.Context, st *runState) error {
	rl := s.rl
	if rl == nil {
		return nil
	}
	req := st.req
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if st.resumed != nil {
		// A paused run goes on (its answer claimed its checkpoint): its
		// log goes on too, after the last id its pause stored (the pause
		// stored its events before its checkpoint could be claimed).
		w, err := rl.Events.Continue(sctx, req.RunID, "", rl.Replica)
		if err != nil {
			s.log.Warn("the resumed run's events are not kept: it cannot be rejoined", "run", req.RunID, "err", err)
			return nil
		}
		st.lg = &runLog{w: w, waiting: true}
		rl.mu.Lock()
		rl.runs[req.RunID] = st
		rl.mu.Unlock()
		return nil
	}
	w, err := rl.Events.Start(sctx, eventlog.Meta{RunID: req.RunID, Owner: rl.Replica, ChainID: req.ChainID,
		ThreadID: req.ThreadID, UserID: req.Owner, Source: req.Source, StartedAt: st.started.UTC()})
	switch {
	case errors.Is(err, eventlog.ErrExists):
		return fmt.Errorf("%w: %s", ErrRunExists, req.RunID)
	case err != nil:
		s.log.Warn("the run's events are not kept: it cannot be rejoined", "run", req.RunID, "err", err)
		return nil
	}
	st.lg = &runLog{w: w}
	rl.mu.Lock()
	rl.runs[req.RunID] = st
	rl.mu.Unlock()
	return nil
}

// logEvent appends a segment's event to the run's log and gives it its id;
// it reports whether the event ends the segment on interrupts (the caller
// then hands the run over: handOverLocked). The caller holds st.mu. A
// segment that ends on interrupts marks the run waiting before its
// RUN_FINISHED is appended, and the next segment's RUN_STARTED marks it
// running again.
func (st *runState) logEvent(ev *events.Event) bool {
	pause := ev.SubagentRunID == "" && ev.Type == events.RunFinished && ev.Outcome == events.OutcomeInterrupt
	lg := st.lg
	if lg == nil || lg.ended {
		return pause
	}
	if ev.SubagentRunID == "" {
		switch {
		case ev.Type == events.RunStarted && lg.waiting:
			lg.waiting = false
			lg.setStatus(eventlog.StatusRunning)
		case pause:
			lg.waiting = true
			lg.setStatus(eventlog.StatusWaiting)
		}
	}
	lg.buf = ev.AppendJSON(lg.buf[:0])
	ev.LogID = lg.w.Append(lg.buf)
	return pause
}

func (lg *runLog) setStatus(status string) {
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	_ = lg.w.SetStatus(ctx, status)
}

// logEnd ends the run's log with its outcome, after its terminal event:
// followers return after it. The caller holds st.mu.
func (st *runState) logEndLocked(outcome string) {
	lg := st.lg
	if lg == nil || lg.ended {
		return
	}
	lg.ended = true
	if lg.timer != nil {
		lg.timer.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	if err := lg.w.End(ctx, outcome); err != nil {
		st.s.log.Warn("the run's end was not kept in its log", "run", st.req.RunID, "err", err)
	}
	if err := lg.w.Err(); err != nil {
		st.s.log.Warn("some of the run's events were not kept", "run", st.req.RunID, "err", err)
	}
	rl := st.s.rl
	rl.mu.Lock()
	if rl.runs[st.req.RunID] == st {
		delete(rl.runs, st.req.RunID)
	}
	rl.mu.Unlock()
}

// logPauseLocked keeps the logs of a run that paused (a checkpoint now)
// open, waiting, for its resumption to go on writing them, in this process
// or another, and hands the run over; nothing of it stays in this
// process. The caller holds st.mu.
func (st *runState) logPauseLocked() {
	lg := st.lg
	if lg != nil && !lg.ended && !lg.waiting {
		lg.waiting = true
		lg.setStatus(eventlog.StatusWaiting)
	}
	// A pause no client heard of (the run had none) is handed over here.
	st.handOverLocked()
	if lg == nil || lg.ended {
		return
	}
	lg.ended = true // for this runState: the run's next one writes on
	if lg.timer != nil {
		lg.timer.Stop()
	}
	rl := st.s.rl
	rl.mu.Lock()
	if rl.runs[st.req.RunID] == st {
		delete(rl.runs, st.req.RunID)
	}
	rl.mu.Unlock()
}

// handOverTimeout bounds a pause's hand-over: the run's end waits for it.
const handOverTimeout = 2 * time.Second

// handOverLocked makes the paused run's checkpoint claimable once every
// event of its log is stored: its writer is detached (what is pending is
// written now), and so is its record's (Recording.Events), then the
// checkpoint, which the pause saved held by this
// process, is released to the fleet. Whoever claims it, here or on
// another replica, at once or later, continues the log after the pause's
// last id: no id is given twice, none goes back. A log that cannot be
// written now (its store is down) does not keep the run from being
// answered: the checkpoint is released all the same, and the pending
// events go with the flusher when the store is back. The caller holds
// st.mu.
func (st *runState) handOverLocked() {
	if st.handedOver {
		return
	}
	st.handedOver = true
	ctx, cancel := context.WithTimeout(context.Background(), handOverTimeout)
	defer cancel()
	var ws []eventlog.Writer
	if lg := st.lg; lg != nil {
		ws = append(ws, lg.w)
	}
	if w := st.rec.pauseLog(); w != nil {
		ws = append(ws, w)
	}
	for _, w := range ws {
		if err := w.Detach(ctx); err != nil {
			st.s.log.Warn("the paused run's last events are not stored yet: a replica that answers it at once may give their ids again",
				"run", st.req.RunID, "err", err)
		}
	}
	if st.hold != 0 {
		st.s.releasePause(ctx, st.req.RunID, st.hold)
		st.hold = 0
	}
}

// abandonLog ends the log of a run that did not start.
func (st *runState) abandonLog() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.logEndLocked(OutcomeError)
}

// logTail makes sure a run that ends without a client still ends what
// keeps its events (its log, its record) with its terminal event, once: a
// run that ended while paused (its interrupts expired) gets a segment of
// its own, which only they read.
func (st *runState) logTail() {
	st.mu.Lock()
	keep := st.lg != nil && !st.lg.ended || st.rec != nil
	need := keep && st.seg == nil && !st.terminated
	st.mu.Unlock()
	if need {
		st.attach(events.Discard, st.req.ThreadID, st.req.RunID)
	}
}
