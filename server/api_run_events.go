package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
	"github.com/ruleagent/ruleagent/state/control"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// events answers GET /api/v1/runs/{runId}/events: the run's events from
// its log, after Last-Event-ID (or ?after=), then its live ones, as SSE
// with their ids, until the run ends (or pauses: its segment ends on
// interrupts). Any replica answers, for a run of any replica.
func (a runsAPI) events(w http.ResponseWriter, r *http.Request) {
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	id := r.PathValue("runId")
	if a.s.rl == nil {
		writeError(w, http.StatusNotFound, "this server keeps no run events (no event log is configured)")
		return
	}
	if !a.s.rejoin(w, r, id, rejoinScope{after: after, heartbeat: a.heartbeat}) {
		writeError(w, http.StatusNotFound, "no run "+quote(id)+" (unknown, or its events expired after their retention)")
	}
}

// lastEventID reads where a rejoining client stopped: the Last-Event-ID
// header (an SSE client's reconnect) or ?after=; 0 for the start.
func lastEventID(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	v := r.Header.Get("Last-Event-ID")
	name := "Last-Event-ID"
	if q := r.URL.Query().Get("after"); q != "" {
		v, name = q, "after"
	}
	if v = strings.TrimSpace(v); v == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, name+" must be an event id (a number), not "+quote(v))
		return 0, false
	}
	return n, true
}

// rejoinScope is what a rejoining request asks for.
type rejoinScope struct {
	// after is the last event id the client has (0: from the start).
	after uint64
	// threadID, when set, must be the run's thread (an AG-UI client
	// posting its RunAgentInput again).
	threadID  string
	heartbeat time.Duration
	// skip leaves events out (an AG-UI client that did not ask for the
	// sub-agents' lifecycle events).
	skip func(data []byte) bool
}

// rejoin answers a client that rejoins run id: its events as SSE, or why
// not (409 for another thread). It reports false, having answered
// nothing, when the run has no log or is another caller's.
func (s *Store) rejoin(w http.ResponseWriter, r *http.Request, id string, sc rejoinScope) bool {
	if s.rl == nil {
		return false
	}
	ctx := r.Context()
	m, status, msg := s.mayRejoin(ctx, id, sc)
	switch {
	case status == http.StatusNotFound:
		return false
	case status != 0:
		writeError(w, status, msg)
		return true
	}
	if s.nothingAfter(ctx, m, sc.after) {
		// The client has the whole run: 204 tells an EventSource to stop
		// reconnecting.
		w.Header().Set("X-Run-Id", id)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	out := sse.Start(w, sc.heartbeat, map[string]string{"X-Run-Id": id, "X-Thread-Id": m.ThreadID})
	defer out.Close()
	s.follow(ctx, out, m, sc)
	return true
}

// nothingAfter reports whether run m has ended and its log holds nothing a
// client that has its events up to after lacks (a run that ended
// replica_lost always has its terminal event to send: see lostEnd).
func (s *Store) nothingAfter(ctx context.Context, m eventlog.Meta, after uint64) bool {
	if !m.Ended() || after == 0 {
		return false
	}
	if after >= lostIDBase {
		// The client has the run's replica_lost end, which came last.
		return true
	}
	more := false
	for range s.rl.Events.Follow(ctx, m.RunID, after) {
		more = true // an event, or an error that follow reports
		break
	}
	if more {
		return false
	}
	_, data, err := s.lastEvent(ctx, m.RunID)
	return err == nil && !lostTerminal(data)
}

// rejoinInto follows run id in a stream already started: a new run whose
// id turned out to name a run already (of another replica, or ended). A
// refusal is the stream's RUN_ERROR.
func (s *Store) rejoinInto(ctx context.Context, out *sse.Writer, id string, sc rejoinScope) {
	m, status, msg := s.mayRejoin(ctx, id, sc)
	if status != 0 {
		if status == http.StatusNotFound {
			msg = ErrRunExists.Error() + ", but its events cannot be read"
		}
		out.Emit(events.Event{Type: events.RunError, Timestamp: time.Now().UnixMilli(), Message: msg, Code: "run_not_started"})
		return
	}
	s.follow(ctx, out, m, sc)
}

// mayRejoin reads run id's Meta and checks that the caller may rejoin it:
// a status (404: no log, or another caller's run; 409, 503) and why, or 0. A run whose replica
// is gone, and that the janitor has not ended yet, is ended first.
func (s *Store) mayRejoin(ctx context.Context, id string, sc rejoinScope) (eventlog.Meta, int, string) {
	rl := s.rl
	m, err := rl.Events.Meta(ctx, id)
	switch {
	case errors.Is(err, eventlog.ErrNotFound):
		return m, http.StatusNotFound, ""
	case err != nil:
		return m, http.StatusServiceUnavailable, "the run's events cannot be read: " + err.Error()
	case !identity.MayAct(identity.From(ctx), m.UserID):
		// Another caller's run is as unknown as one that never was.
		return m, http.StatusNotFound, ""
	case sc.threadID != "" && m.ThreadID != sc.threadID:
		return m, http.StatusConflict, "run " + quote(id) + " belongs to thread " + quote(m.ThreadID) + ", not " + quote(sc.threadID) + ": a run id names one run"
	}
	if rl.ownerGone(ctx, m) {
		rl.endLost(ctx, m)
	}
	return m, 0, ""
}

// eventsMissing is the CUSTOM event a rejoined stream sends where the log
// skips ids: events dropped by its bounds (the oldest go first), or that
// could not be stored while its store was unreachable.
const eventsMissing = "ruleagent.events_missing"

// follow writes run m's logged events after sc.after to out, then its live
// ones, until the run ends or pauses, or ctx ends. While it follows a run
// that goes on, it tells the run's replica so (a run whose own client
// left is not cancelled while someone follows it).
func (s *Store) follow(ctx context.Context, out *sse.Writer, m eventlog.Meta, sc rejoinScope) {
	rl := s.rl
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !m.Ended() && rl.RejoinGrace > 0 {
		go rl.keepFollowed(ctx, m)
	}
	pos := sc.after
	ended := false
	for e, err := range rl.Events.Follow(ctx, m.RunID, sc.after) {
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("a rejoined run's stream ended early", "run", m.RunID, "err", err)
			}
			return
		}
		if e.ID > pos+1 {
			v, _ := json.Marshal(map[string]any{"after": pos, "next": e.ID, "missing": e.ID - pos - 1,
				"reason": "the run's log is bounded (its oldest events go first), or its store was unreachable when they were emitted"})
			_ = out.Event(&events.Event{Type: events.Custom, Timestamp: time.Now().UnixMilli(), Name: eventsMissing, Value: v})
		}
		pos = e.ID
		if sc.skip != nil && sc.skip(e.Data) {
			continue
		}
		if out.Logged(wireID(e.ID, e.Data), e.Data) != nil {
			return
		}
		ended = ended || terminal(e.Data)
		if pausedEnd(e.Data) {
			if cur, err := rl.Events.Meta(ctx, m.RunID); err == nil && cur.Status == eventlog.StatusWaiting {
				// The run waits for answers: its segment is over.
				return
			}
		}
	}
	if !ended && sc.after > 0 && ctx.Err() == nil {
		s.lostEnd(ctx, out, m.RunID)
	}
}

// lostEnd sends a client that rejoined an ended run after its last id the
// run's terminal event all the same. That happens when the run's replica
// died before its last events were written (they are written in batches;
// its client had them already): the replica that ended the run gave its
// RUN_ERROR replica_lost the next id of the log, which the client has. It
// goes with its SSE id (wireID), above the client's: the client has it
// once.
func (s *Store) lostEnd(ctx context.Context, out *sse.Writer, runID string) {
	// Only a replica_lost end: a run that ended by itself wrote every id
	// its client had, its terminal event included.
	if id, data, err := s.lastEvent(ctx, runID); err == nil && lostTerminal(data) {
		_ = out.Logged(wireID(id, data), data)
	}
}

// lostIDBase is added to the log id of a run's RUN_ERROR replica_lost in
// the SSE id it is sent with. The replica that ended the run gave it the
// next id of the log, which may be at or below ids the dead replica gave
// its client (events it had not written yet): sent with an id above every
// id a run can reach (2^52, still exact as a JavaScript number), it is
// the last id a client has, and a client that reconnects with it has the
// whole run (204), however it got it.
const lostIDBase uint64 = 1 << 52

// wireID is the SSE id of logged event id (data).
func wireID(id uint64, data []byte) uint64 {
	if lostTerminal(data) {
		return lostIDBase + id
	}
	return id
}

// lastEvent reads run runID's last event (a copy).
func (s *Store) lastEvent(ctx context.Context, runID string) (uint64, []byte, error) {
	var id uint64
	var data []byte
	for e, err := range s.rl.Events.Follow(ctx, runID, 0) {
		if err != nil {
			return 0, nil, err
		}
		id, data = e.ID, append(data[:0], e.Data...)
	}
	return id, data, nil
}

// lostTerminal reports whether an encoded event is the RUN_ERROR
// replica_lost that ends the run of a replica that died.
func lostTerminal(data []byte) bool {
	return bytes.HasPrefix(data, []byte(`{"type":"RUN_ERROR"`)) && bytes.Contains(data, []byte(`"code":"`+codeReplicaLost+`"`))
}

// terminal reports whether an encoded event ends a run (or a segment).
func terminal(data []byte) bool {
	return bytes.HasPrefix(data, []byte(`{"type":"RUN_FINISHED"`)) || bytes.HasPrefix(data, []byte(`{"type":"RUN_ERROR"`))
}

// pausedEnd reports whether an encoded event ends a segment on interrupts.
func pausedEnd(data []byte) bool {
	return bytes.HasPrefix(data, []byte(`{"type":"RUN_FINISHED"`)) && bytes.Contains(data, []byte(`"outcome":{"type":"interrupt"`))
}

// subagentLifecycle reports an encoded SUBAGENT_* lifecycle event.
func subagentLifecycle(data []byte) bool {
	return bytes.HasPrefix(data, []byte(`{"type":"SUBAGENT_`))
}

// keepFollowed tells run m's replica, every third of the rejoin grace
// until ctx ends, that a client follows the run.
func (rl *runLogs) keepFollowed(ctx context.Context, m eventlog.Meta) {
	every := max(rl.RejoinGrace/3, 100*time.Millisecond)
	for {
		sctx, cancel := context.WithTimeout(ctx, control.DefaultTimeout)
		_, _ = rl.send(sctx, m.Owner, control.Message{Kind: controlFollow, RunID: m.RunID})
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
