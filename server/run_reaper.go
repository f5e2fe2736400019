package server

import (
	"context"
	"errors"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// codeReplicaLost is the RUN_ERROR code of a run whose replica died (or
// whose process was killed, on one machine) before it ended.
const codeReplicaLost = "replica_lost"

// eventlogLive selects the runs that have not ended.
var eventlogLive = eventlog.Filter{Live: true}

// janitor ends, every ReapEvery until the store closes, the runs whose
// replica is gone: on one machine those of an earlier process (at once,
// at start), in a fleet those of a replica whose heartbeat stopped.
func (rl *runLogs) janitor() {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-rl.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rl.reap(ctx)
		cancel()
		t.Reset(rl.ReapEvery)
	}
}

// reapQuiet is how long the janitor declares nobody dead after the store
// failed it: a replica whose heartbeat lapsed while Redis was down or
// frozen beats again within a third of its TTL once Redis is back.
const reapQuiet = 10 * time.Second

// reap ends the runs that have not ended and whose owner is not alive.
func (rl *runLogs) reap(ctx context.Context) {
	live, err := rl.Events.List(ctx, eventlogLive)
	if err != nil {
		rl.troubled()
		return
	}
	if !rl.quiet() {
		return
	}
	alive := map[string]bool{rl.Replica: true}
	for _, m := range live {
		if m.Status == eventlog.StatusWaiting {
			// A paused run is a checkpoint: any replica goes on with it
			// (or ends it when its interrupts expire), whoever paused it.
			continue
		}
		ok, known := alive[m.Owner]
		if !known {
			a, err := rl.Alive(ctx, m.Owner)
			if err != nil {
				// The registry cannot say: nobody is declared dead.
				rl.troubled()
				return
			}
			ok, alive[m.Owner] = a, a
		}
		if !ok {
			rl.endLost(ctx, m)
		}
	}
}

func (rl *runLogs) troubled() { rl.trouble.Store(time.Now().UnixNano()) }

// quiet reports whether the store has worked for the janitor for
// reapQuiet.
func (rl *runLogs) quiet() bool {
	return time.Since(time.Unix(0, rl.trouble.Load())) >= reapQuiet
}

// ownerGone reports whether the run m describes has not ended and its
// replica is gone (a reader ends it then, not waiting for the janitor).
func (rl *runLogs) ownerGone(ctx context.Context, m eventlog.Meta) bool {
	if m.Ended() || m.Status == eventlog.StatusWaiting || m.Owner == rl.Replica || !rl.quiet() {
		return false
	}
	alive, err := rl.Alive(ctx, m.Owner)
	return err == nil && !alive
}

// endLost ends the log of run m, whose replica is gone, with one terminal
// event: RUN_ERROR, code replica_lost. Of the replicas that try at once,
// one takes the run's log over (eventlog Continue from its dead owner);
// the others find it taken or ended, and leave it.
func (rl *runLogs) endLost(ctx context.Context, m eventlog.Meta) {
	w, err := rl.Events.Continue(ctx, m.RunID, m.Owner, rl.Replica)
	if err != nil {
		if !errors.Is(err, eventlog.ErrOwned) && !errors.Is(err, eventlog.ErrEnded) && !errors.Is(err, eventlog.ErrNotFound) {
			rl.s.log.Warn("the run of a replica that is gone could not be ended", "run", m.RunID, "replica", m.Owner, "err", err)
		}
		return
	}
	now := time.Now()
	var b []byte
	if m.Status == eventlog.StatusWaiting {
		// Its last segment ended (on interrupts): its end is a segment of
		// its own.
		start := events.Event{Type: events.RunStarted, Timestamp: now.UnixMilli(), ThreadID: m.ThreadID, RunID: m.RunID,
			ProtocolVersion: events.ProtocolVersion}
		b = start.AppendJSON(b)
		w.Append(b)
	}
	end := events.Event{Type: events.RunError, Timestamp: now.UnixMilli(), Code: codeReplicaLost,
		Message: "the run ended without its replica: the server running it (" + m.Owner + ") stopped before the run ended (killed, crashed, or cut off from the fleet)"}
	w.Append(end.AppendJSON(b[:0]))
	if err := w.End(ctx, OutcomeError); err != nil {
		rl.s.log.Warn("the end of a lost run was not kept", "run", m.RunID, "err", err)
		return
	}
	rl.s.log.Warn("run ended: its replica is gone", "run", m.RunID, "replica", m.Owner, "code", codeReplicaLost)
}
