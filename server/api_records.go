package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// recordsAPI serves the stored runs: their list, their export, their
// replay and their forks.
type recordsAPI struct {
	s         *Store
	heartbeat time.Duration
}

func (a recordsAPI) register(add func(string, http.HandlerFunc)) {
	add("GET /api/v1/records", a.list)
	add("GET /api/v1/runs/{runId}/record", a.export)
	add("POST /api/v1/runs/{runId}/replay", a.replay)
	add("POST /api/v1/runs/{runId}/fork", a.fork)
}

// errNoRecords answers when the store keeps no records.
const errNoRecords = "this server keeps no run records (serve --record-runs off)"

// list answers GET /api/v1/records?chain=&thread=&user=&limit=: the
// recorded runs, newest first; a verified caller sees its own.
func (a recordsAPI) list(w http.ResponseWriter, r *http.Request) {
	st := a.s.recording.Records
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, errNoRecords)
		return
	}
	q := r.URL.Query()
	f := runrecord.Filter{ChainID: q.Get("chain"), ThreadID: q.Get("thread"), UserID: q.Get("user")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		f.Limit = n
	}
	if p := identity.From(r.Context()); p.Verified() {
		f.Owner = p.User
	}
	list, err := a.s.ListRecords(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if list == nil {
		list = []runrecord.Meta{}
	}
	writeJSON(w, http.StatusOK, list)
}

// record finds a run's record for the caller, or answers the error.
func (a recordsAPI) record(w http.ResponseWriter, r *http.Request) (*runrecord.Record, bool) {
	st := a.s.recording.Records
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, errNoRecords)
		return nil, false
	}
	id := r.PathValue("runId")
	rec, err := a.s.GetRecord(r.Context(), id)
	switch {
	case errors.Is(err, runrecord.ErrNotFound) || err == nil && !identity.MayAct(identity.From(r.Context()), rec.Meta.Owner):
		// Another caller's run is as unknown as one that never was.
		writeError(w, http.StatusNotFound, "no record of run "+quote(id)+" (unknown, expired, or not recorded)")
		return nil, false
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return nil, false
	}
	return rec, true
}

// export answers GET /api/v1/runs/{runId}/record: the record with the
// run's events (?events=false leaves them out), as ruleagent runs export
// writes it and ruleagent replay reads it.
func (a recordsAPI) export(w http.ResponseWriter, r *http.Request) {
	rec, ok := a.record(w, r)
	if !ok {
		return
	}
	if r.URL.Query().Get("events") != "false" {
		evs, err := a.s.RecordedEvents(r.Context(), rec)
		if err != nil && !errors.Is(err, ErrNotReplayable) {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		rec.Events = rawEvents(evs)
	}
	writeJSON(w, http.StatusOK, rec)
}

// replay answers POST /api/v1/runs/{runId}/replay {"rerunReadOnly"?}:
// the run replayed against its record, and how it compares.
func (a recordsAPI) replay(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ReRunReadOnly bool `json:"rerunReadOnly"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	rec, ok := a.record(w, r)
	if !ok {
		return
	}
	evs, err := a.s.RecordedEvents(r.Context(), rec)
	if err == nil {
		var rep *ReplayReport
		if rep, err = a.s.Replay(r.Context(), rec, evs, ReplayOptions{ReRunReadOnly: body.ReRunReadOnly,
			Owner: identity.From(r.Context()).User}); err == nil {
			writeJSON(w, http.StatusOK, rep)
			return
		}
	}
	writeReplayError(w, err)
}

// fork answers POST /api/v1/runs/{runId}/fork: a ForkRequest, plus
// "stream" (or Accept: text/event-stream) for the fork's events as SSE;
// else the fork's answer as the run route gives it, with forkedFrom.
func (a recordsAPI) fork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ForkRequest
		Stream bool `json:"stream"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	rec, ok := a.record(w, r)
	if !ok {
		return
	}
	if _, err := planFork(rec, &body.ForkRequest); err != nil {
		writeReplayError(w, err)
		return
	}
	req := RunRequest{RunID: agent.NewID("run-"), Owner: identity.From(r.Context()).User}
	from := runrecord.ForkRef{RunID: rec.Meta.RunID, Step: body.Step, Agent: body.Agent}
	headers := map[string]string{"X-Run-Id": req.RunID, "X-Forked-From": from.RunID + "#" + strconv.Itoa(from.Step)}
	if body.Stream || wantsStream(r) {
		// The stream opens with the fork's first event: a fork that cannot
		// start is answered with its error instead.
		out := &lazySSE{start: func() *sse.Writer { return sse.Start(w, a.heartbeat, headers) }}
		defer out.close()
		req.Sink = out
		if _, err := a.s.Fork(r.Context(), rec, body.ForkRequest, req); err != nil && !out.started() {
			writeReplayError(w, err)
		}
		return
	}
	res, err := a.s.Fork(r.Context(), rec, body.ForkRequest, req)
	if err != nil && res.Outcome == "" {
		writeReplayError(w, err)
		return
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, http.StatusOK, struct {
		runAnswer
		ParentRunID string            `json:"parentRunId"`
		ForkedFrom  runrecord.ForkRef `json:"forkedFrom"`
	}{answerOf(res), from.RunID, from})
}

// writeReplayError answers a replay or fork that could not run: 409 for
// a record that cannot be replayed, 400 for a fork that does not fit it.
func writeReplayError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrFork):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrNotReplayable), errors.Is(err, ErrDivergence):
		writeError(w, http.StatusConflict, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

// RecordedEvents returns a finished run's events as they were sent
// (AG-UI JSON): those its record kept, else the event log's. A run whose
// events are not all kept (the log's bounds, or none) cannot be
// compared: ErrNotReplayable.
func (s *Store) RecordedEvents(ctx context.Context, rec *runrecord.Record) ([][]byte, error) {
	if len(rec.Events) > 0 {
		out := make([][]byte, len(rec.Events))
		for i, e := range rec.Events {
			out[i] = e
		}
		return out, nil
	}
	runID := rec.Meta.RunID
	l := s.recordingLog()
	if l == nil {
		return nil, fmt.Errorf("%w: this server keeps no run events", ErrNotReplayable)
	}
	m, err := l.Meta(ctx, runID)
	switch {
	case errors.Is(err, eventlog.ErrNotFound):
		return nil, fmt.Errorf("%w: its events are not kept (expired?)", ErrNotReplayable)
	case err != nil:
		return nil, err
	case !m.Ended():
		return nil, fmt.Errorf("%w: it has not ended", ErrNotReplayable)
	}
	var out [][]byte
	next := uint64(1)
	for e, err := range l.Follow(ctx, runID, 0) {
		if err != nil {
			return nil, err
		}
		if e.ID != next {
			return nil, fmt.Errorf("%w: its event log lost events %d to %d (the log's bounds)", ErrNotReplayable, next, e.ID-1)
		}
		next++
		out = append(out, append([]byte(nil), e.Data...))
	}
	return out, nil
}

func rawEvents(evs [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e
	}
	return out
}

// lazySSE opens its SSE stream at the first event.
type lazySSE struct {
	start func() *sse.Writer
	mu    sync.Mutex
	w     *sse.Writer
}

func (l *lazySSE) Emit(e events.Event) {
	l.mu.Lock()
	if l.w == nil {
		l.w = l.start()
	}
	w := l.w
	l.mu.Unlock()
	w.Emit(e)
}

func (l *lazySSE) started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w != nil
}

func (l *lazySSE) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		l.w.Close()
	}
}
