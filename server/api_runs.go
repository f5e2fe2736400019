package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/server/sse"
	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// runsAPI serves the run routes.
type runsAPI struct {
	s         *Store
	heartbeat time.Duration
}

// runBody is the body of POST /api/v1/chains/{id}/run.
type runBody struct {
	// Input is text, {"messages": [...]} or a messages array.
	Input    json.RawMessage `json:"input"`
	Metadata map[string]any  `json:"metadata"`
	ThreadID string          `json:"threadId"`
	RunID    string          `json:"runId"`
	Stream   bool            `json:"stream"`
	// MsgType is the message type (default CHAT), for chains that route
	// on it.
	MsgType string `json:"msgType"`
}

// runAnswer is the JSON answer of a run.
type runAnswer struct {
	RunID     string              `json:"runId"`
	ThreadID  string              `json:"threadId"`
	Outcome   string              `json:"outcome"`
	Data      string              `json:"data"`
	Metadata  map[string]string   `json:"metadata"`
	Relation  string              `json:"relation,omitempty"`
	Error     string              `json:"error,omitempty"`
	ErrorCode string              `json:"errorCode,omitempty"`
	Usage     []events.TokenUsage `json:"usage,omitempty"`
	// Cost and Currency are what the run cost, as RUN_FINISHED's metadata
	// says, when a price table applies (serve --prices).
	Cost     string `json:"cost,omitempty"`
	Currency string `json:"currency,omitempty"`
	// Interrupts are what a paused run waits for (outcome interrupt):
	// answer them with POST /api/v1/runs/{runId}/resume.
	Interrupts []events.Interrupt `json:"interrupts,omitempty"`
	// Ends lists every end of a chain that ended more than once (branches).
	Ends []endAnswer `json:"ends,omitempty"`
}

type endAnswer struct {
	Data     string            `json:"data"`
	Metadata map[string]string `json:"metadata"`
	Relation string            `json:"relation"`
	Error    string            `json:"error,omitempty"`
}

// run answers POST /api/v1/chains/{id}/run.
func (a runsAPI) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var body runBody
	if !readJSON(w, r, &body) {
		return
	}
	input, err := inputText(body.Input)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, ok := a.s.Engine(id); !ok {
		writeError(w, http.StatusNotFound, "no chain "+quote(id)+" is deployed")
		return
	}
	md := metadataStrings(body.Metadata)
	p := identity.From(r.Context())
	if !claimUser(w, p, md, `"metadata.userId"`) {
		return
	}
	req := RunRequest{ChainID: id, Input: input, Metadata: md, ThreadID: body.ThreadID,
		RunID: body.RunID, MsgType: body.MsgType, Source: "run", Interruptible: true, Rejoinable: true, Owner: p.User,
		NewThread: body.ThreadID == ""}
	req.RunID = cmpOrID(req.RunID, "run-")
	req.ThreadID = cmpOrID(req.ThreadID, "thread-")
	stream := body.Stream || wantsStream(r)
	_, busy := a.s.runs.Get(req.RunID)
	if stream && body.RunID != "" && (busy || r.Header.Get("Last-Event-ID") != "") {
		// A client that reconnects: it rejoins its run.
		if a.rejoin(w, r, req.RunID, body.ThreadID) {
			return
		}
	}
	if busy {
		writeError(w, http.StatusConflict, runs.ErrDuplicate.Error()+": "+req.RunID)
		return
	}
	headers := map[string]string{"X-Run-Id": req.RunID, "X-Thread-Id": req.ThreadID}
	if stream {
		out := sse.Start(w, a.heartbeat, headers)
		defer out.Close()
		req.Sink = out
		if _, err := a.s.Run(r.Context(), req); errors.Is(err, ErrRunExists) {
			// The run id names a run of another replica, or one that
			// ended: the client rejoins it, from the start.
			a.s.rejoinInto(r.Context(), out, req.RunID, rejoinScope{threadID: body.ThreadID})
		}
		return
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	res, err := a.s.Run(r.Context(), req)
	switch {
	case errors.Is(err, runs.ErrDuplicate):
		writeError(w, http.StatusConflict, err.Error())
		return
	case errors.Is(err, ErrRunExists):
		writeError(w, http.StatusConflict, err.Error()+": follow its events at GET /api/v1/runs/"+req.RunID+"/events")
		return
	}
	writeJSON(w, http.StatusOK, answerOf(res))
}

// rejoin answers a client of the run route that reconnects to run id
// (after Last-Event-ID); it reports false when the run has no log.
func (a runsAPI) rejoin(w http.ResponseWriter, r *http.Request, id, threadID string) bool {
	after, ok := lastEventID(w, r)
	if !ok {
		return true
	}
	return a.s.rejoin(w, r, id, rejoinScope{after: after, threadID: threadID, heartbeat: a.heartbeat})
}

// resume answers POST /api/v1/runs/{runId}/resume: {"resume": [...],
// "stream": false} answers the paused run's interrupts and answers with
// the rest of the run like the run route (JSON or SSE).
func (a runsAPI) resume(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Resume []ResumeEntry `json:"resume"`
		Stream bool          `json:"stream"`
		// ThreadID, when given, must be the run's thread.
		ThreadID string `json:"threadId"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	id := r.PathValue("runId")
	rs, err := a.s.claim(r.Context(), body.Resume, resumeScope{runID: id, threadID: body.ThreadID, user: identity.From(r.Context()).User})
	if err != nil {
		writeResumeError(w, err)
		return
	}
	headers := map[string]string{"X-Run-Id": id, "X-Thread-Id": rs.state.ThreadID}
	if body.Stream || wantsStream(r) {
		out := sse.Start(w, a.heartbeat, headers)
		defer out.Close()
		_, _ = a.s.goOn(r.Context(), rs, out, "", "")
		return
	}
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	res, _ := a.s.goOn(r.Context(), rs, events.Discard, "", "")
	writeJSON(w, http.StatusOK, answerOf(res))
}

// answerOf is a run's JSON answer.
func answerOf(res RunResult) runAnswer {
	ans := runAnswer{RunID: res.RunID, ThreadID: res.ThreadID, Outcome: res.Outcome, Relation: res.Relation,
		Error: res.Error, ErrorCode: res.ErrorCode, Usage: res.Usage, Cost: res.Cost, Currency: res.Currency, Metadata: map[string]string{}, Interrupts: res.Interrupts}
	if res.Msg.Data != nil {
		ans.Data = res.Msg.GetData()
	}
	if res.Msg.Metadata != nil {
		ans.Metadata = res.Msg.Metadata.Values()
	}
	for _, e := range res.Ends {
		ea := endAnswer{Relation: e.Relation, Error: e.Error, Metadata: map[string]string{}}
		if e.Msg.Data != nil {
			ea.Data = e.Msg.GetData()
		}
		if e.Msg.Metadata != nil {
			ea.Metadata = e.Msg.Metadata.Values()
		}
		ans.Ends = append(ans.Ends, ea)
	}
	return ans
}

// list answers GET /api/v1/runs: the runs in progress (with an event log,
// on every replica of the fleet); a verified user sees their own runs, the
// operator (and every caller where nobody is verified) all of them.
// Paused runs (checkpoints, on any replica sharing the store) are listed
// with status waiting and their interrupts.
func (a runsAPI) list(w http.ResponseWriter, r *http.Request) {
	p := identity.From(r.Context())
	var all []runs.Info
	if a.s.rl != nil {
		all = a.s.rl.fleetRuns(r.Context())
	} else {
		all = a.s.runs.List()
	}
	mine := all[:0]
	for _, info := range all {
		if identity.MayAct(p, info.User) {
			mine = append(mine, info)
		}
	}
	paused, err := a.s.pausedRuns(r.Context(), p)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	for _, info := range paused {
		if !slices.ContainsFunc(mine, func(i runs.Info) bool { return i.RunID == info.RunID }) {
			mine = append(mine, info)
		}
	}
	slices.SortStableFunc(mine, func(a, b runs.Info) int { return a.StartedAt.Compare(b.StartedAt) })
	writeJSON(w, http.StatusOK, mine)
}

// cancel answers POST /api/v1/runs/{runId}/cancel.
func (a runsAPI) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("runId")
	p := identity.From(r.Context())
	run, ok := a.s.runs.Get(id)
	if !ok {
		// A paused run is cancelled where it is kept.
		err := a.s.cancelPaused(r.Context(), id, identity.From(r.Context()))
		if (errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, ErrNotYours)) && a.s.rl != nil {
			// It may run on another replica of the fleet.
			status, body := a.s.rl.cancelRemote(r.Context(), id, func(owner string) bool { return identity.MayAct(p, owner) })
			writeJSON(w, status, body)
			return
		}
		switch {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]any{"runId": id, "cancelled": true})
		case errors.Is(err, checkpoint.ErrNotFound) || errors.Is(err, ErrNotYours):
			// Another caller's run is as unknown as one that never was.
			writeError(w, http.StatusNotFound, "no run "+quote(id)+" is in progress")
		case errors.Is(err, runs.ErrDuplicate):
			writeError(w, http.StatusConflict, "run "+quote(id)+" is being resumed: cancel it again once it runs")
		default:
			writeError(w, http.StatusServiceUnavailable, err.Error())
		}
		return
	}
	if !identity.MayAct(p, run.Info().User) {
		writeError(w, http.StatusNotFound, "no run "+quote(id)+" is in progress")
		return
	}
	run.Cancel(runs.ErrCancelled)
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": id, "cancelled": true})
}

// writeResumeError refuses a resume: 503 when the paused runs' store
// failed, 409 for answers that cannot be taken (the interrupts stay open;
// another caller's interrupts are answered as unknown ones: asUnknown).
func writeResumeError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, errCheckpoints):
		writeError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeError(w, http.StatusConflict, err.Error())
	}
}

// claimUser settles the run's userId (md["userId"], from the body field
// named field) against the caller's verified identity: absent or equal,
// it is the verified id; another user is refused with 403. Without a
// verified identity the body's claim stands. It reports whether the
// request may go on.
func claimUser(w http.ResponseWriter, p identity.Principal, md map[string]string, field string) bool {
	uid, err := identity.Claim(p, md["userId"])
	if err != nil {
		writeError(w, http.StatusForbidden, fmt.Sprintf("%v: %s is %q, but the caller is %q", err, field, md["userId"], p.User))
		return false
	}
	if uid != "" {
		md["userId"] = uid
	}
	return true
}

// inputText turns the run body's input into message data: text as it is,
// {"messages": [...]} or {"message": ...} as JSON, a bare messages array
// wrapped as {"messages": [...]}.
func inputText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New(`the body needs an "input": text, or {"messages": [...]}`)
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		if strings.TrimSpace(s) == "" {
			return "", errors.New(`"input" is empty`)
		}
		return s, nil
	case '[':
		return `{"messages":` + string(raw) + `}`, nil
	case '{':
		return string(raw), nil
	}
	return "", errors.New(`"input" must be text, an object such as {"messages": [...]}, or a messages array`)
}

// metadataStrings turns the body's metadata into message metadata: strings
// as they are, anything else as its JSON.
func metadataStrings(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = x
		case nil:
		default:
			b, _ := json.Marshal(x)
			out[k] = string(b)
		}
	}
	return out
}

// cmpOrID returns id, or a new id with prefix when it is empty.
func cmpOrID(id, prefix string) string {
	if id != "" {
		return id
	}
	return agent.NewID(prefix)
}
