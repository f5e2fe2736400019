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
	// paused are the logs of this process's runs that paused, for their
	// resumption in this process to go on writing (a resumption elsewhere
	// continues the log from what was stored).
	paused map[string]eventlog.Writer

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
	rl := &runLogs{RunLog: o, s: s, runs: map[string]*runState{}, paused: map[string]eventlog.Writer{}, stop: make(chan struct{})}
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
		// log goes on too, in this process's writer if it paused here.
		rl.mu.Lock()
		w, ok := rl.paused[req.RunID]
		delete(rl.paused, req.RunID)
		rl.mu.Unlock()
		var err error
		if !ok {
			w, err = rl.Events.Continue(sctx, req.RunID, "", rl.Replica)
		}
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

// logEvent appends a segment's event to the run's log and gives it its id.
// The caller holds st.mu. A segment that ends on interrupts marks the run
// waiting before its RUN_FINISHED is appended, and the next segment's
// RUN_STARTED marks it running again.
func (st *runState) logEvent(ev *events.Event) {
	lg := st.lg
	if lg == nil || lg.ended {
		return
	}
	if ev.SubagentRunID == "" {
		switch {
		case ev.Type == events.RunStarted && lg.waiting:
			lg.waiting = false
			lg.setStatus(eventlog.StatusRunning)
		case ev.Type == events.RunFinished && ev.Outcome == events.OutcomeInterrupt:
			lg.waiting = true
			lg.setStatus(eventlog.StatusWaiting)
		}
	}
	lg.buf = ev.AppendJSON(lg.buf[:0])
	ev.LogID = lg.w.Append(lg.buf)
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

// logPauseLocked keeps the log of a run that paused (a checkpoint now)
// open, waiting: its resumption goes on writing it, in this process or
// another. The caller holds st.mu.
func (st *runState) logPauseLocked() {
	lg := st.lg
	if lg == nil || lg.ended {
		return
	}
	lg.ended = true // for this runState: the run's next one writes on
	if lg.timer != nil {
		lg.timer.Stop()
	}
	if !lg.waiting {
		lg.waiting = true
		lg.setStatus(eventlog.StatusWaiting)
	}
	rl := st.s.rl
	rl.mu.Lock()
	if rl.runs[st.req.RunID] == st {
		delete(rl.runs, st.req.RunID)
	}
	rl.paused[st.req.RunID] = lg.w
	rl.mu.Unlock()
}

// abandonLog ends the log of a run that did not start.
func (st *runState) abandonLog() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.logEndLocked(OutcomeError)
}

// logTail makes sure a run that ends without a client still ends its log
// with its terminal event: a run that ended while paused (its interrupts
// expired) gets a segment of its own, which only the log reads.
func (st *runState) logTail() {
	st.mu.Lock()
	need := st.lg != nil && !st.lg.ended && st.seg == nil
	st.mu.Unlock()
	if need {
		st.attach(events.Discard, st.req.ThreadID, st.req.RunID)
	}
}
