package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
)

// runAgentInput is AG-UI's RunAgentInput, the body of POST
// /api/v1/chains/{id}/agui.
type runAgentInput struct {
	ThreadID        string               `json:"threadId"`
	RunID           string               `json:"runId"`
	ParentRunID     string               `json:"parentRunId"`
	Messages        json.RawMessage      `json:"messages"`
	Tools           []agent.ClientTool   `json:"tools"`
	Context         []agent.ContextEntry `json:"context"`
	State           json.RawMessage      `json:"state"`
	ForwardedProps  json.RawMessage      `json:"forwardedProps"`
	Resume          []ResumeEntry        `json:"resume"`
	ProtocolVersion string               `json:"protocolVersion"`
}

// aguiAPI serves the AG-UI endpoint.
type aguiAPI struct {
	s         *Store
	heartbeat time.Duration
}

// run answers POST /api/v1/chains/{id}/agui: the chain runs on the
// input's messages and the client's tools, context and state, and its
// events stream back as AG-UI SSE.
func (a aguiAPI) run(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var in runAgentInput
	if !readJSON(w, r, &in) {
		return
	}
	if msgs := bytes.TrimSpace(in.Messages); len(in.Resume) == 0 && (len(msgs) == 0 || msgs[0] != '[') {
		writeError(w, http.StatusBadRequest, `RunAgentInput needs "messages": an array of AG-UI messages`)
		return
	}
	if _, ok := a.s.Engine(id); !ok {
		writeError(w, http.StatusNotFound, "no chain "+quote(id)+" is deployed")
		return
	}
	newThread := in.ThreadID == ""
	in.ThreadID = cmpOrID(in.ThreadID, "thread-")
	in.RunID = cmpOrID(in.RunID, "run-")
	p := identity.From(r.Context())
	md := map[string]string{"source": "agui"}
	// AG-UI has no user field: a front end names its user in
	// forwardedProps.ruleagent.userId, for sessions scoped by user and for
	// tool bindings.
	if uid := gjson.GetBytes(in.ForwardedProps, "ruleagent.userId").String(); uid != "" {
		md["userId"] = uid
	}
	if !claimUser(w, p, md, `"forwardedProps.ruleagent.userId"`) {
		return
	}
	_, busy := a.s.runs.Get(in.RunID)
	if len(in.Resume) == 0 && (busy || r.Header.Get("Last-Event-ID") != "") {
		// A client that reconnects (its RunAgentInput again, with the
		// Last-Event-ID it has) rejoins its run instead of running it again.
		after, ok := lastEventID(w, r)
		if !ok {
			return
		}
		sc := rejoinScope{after: after, heartbeat: a.heartbeat}
		if !newThread {
			sc.threadID = in.ThreadID
		}
		if !subagentEvents(r, in.ForwardedProps) {
			sc.skip = subagentLifecycle
		}
		if a.s.rejoin(w, r, in.RunID, sc) {
			return
		}
	}
	if busy {
		writeError(w, http.StatusConflict, "run "+quote(in.RunID)+" is already in progress")
		return
	}
	for i, t := range in.Tools {
		if t.Name == "" {
			writeError(w, http.StatusBadRequest, "tools["+strconv.Itoa(i)+"] has no name")
			return
		}
	}
	var warning string
	if len(in.Resume) > 0 {
		known, unknown := a.s.splitResume(r.Context(), in.Resume, p.User)
		if len(known) > 0 {
			in.Resume = known
			a.resume(w, r, in, unknown, id)
			return
		}
		// AG-UI: entries for interrupts this server is not waiting on
		// (expired, or never raised) answer nothing; the input runs as
		// new input, with a warning.
		warning = "resume entries answer no open interrupt (unknown or expired) and were ignored: " + strings.Join(unknown, ", ")
		if msgs := bytes.TrimSpace(in.Messages); len(msgs) == 0 || msgs[0] != '[' {
			writeError(w, http.StatusConflict, warning)
			return
		}
	}
	if a.s.threadWaits(r.Context(), p.User, in.ThreadID) {
		writeError(w, http.StatusConflict, "thread "+quote(in.ThreadID)+" has a run waiting for answers to its interrupts: send them in resume before new input")
		return
	}
	caller := &agent.Caller{Tools: in.Tools, Context: in.Context, State: in.State}
	if in.ParentRunID != "" {
		md["parentRunId"] = in.ParentRunID
	}
	out := sse.Start(w, a.heartbeat, map[string]string{"X-Run-Id": in.RunID, "X-Thread-Id": in.ThreadID})
	defer out.Close()
	var sink events.Sink = out
	if !subagentEvents(r, in.ForwardedProps) {
		sink = withoutSubagentLifecycle{out}
	}
	if warning != "" {
		sink = &warnFirst{out: sink, warning: warning}
	}
	_, err := a.s.Run(forwardedTrace(r.Context(), in.ForwardedProps), RunRequest{ChainID: id, Input: `{"messages":` + string(in.Messages) + `}`, Metadata: md,
		ThreadID: in.ThreadID, RunID: in.RunID, Source: "agui", Caller: caller, Sink: sink, Interruptible: true, Rejoinable: true,
		Owner: p.User, NewThread: newThread})
	if errors.Is(err, ErrRunExists) && warning == "" {
		// The run id names a run of another replica, or one that ended:
		// the client rejoins it, from the start.
		sc := rejoinScope{}
		if !newThread {
			sc.threadID = in.ThreadID
		}
		if !subagentEvents(r, in.ForwardedProps) {
			sc.skip = subagentLifecycle
		}
		a.s.rejoinInto(r.Context(), out, in.RunID, sc)
		return
	}
	if err != nil && !errors.As(err, new(*RunFailure)) && !errors.Is(err, errClientLeft) {
		// The run never started (a run id taken in between): say so in
		// the stream the client is reading.
		out.Emit(events.Event{Type: events.RunError, Message: err.Error(), Code: "run_not_started"})
	}
}

// resume answers a paused run's interrupts (RunAgentInput.resume) and
// streams the rest of it as this request's AG-UI run. The interrupts must
// be the thread's own, raised for this caller.
func (a aguiAPI) resume(w http.ResponseWriter, r *http.Request, in runAgentInput, unknown []string, chainID string) {
	res, err := a.s.claim(r.Context(), in.Resume, resumeScope{threadID: in.ThreadID, chainID: chainID, user: identity.From(r.Context()).User})
	if err != nil {
		writeResumeError(w, err)
		return
	}
	out := sse.Start(w, a.heartbeat, map[string]string{"X-Run-Id": in.RunID, "X-Thread-Id": in.ThreadID})
	defer out.Close()
	var sink events.Sink = out
	if !subagentEvents(r, in.ForwardedProps) {
		sink = withoutSubagentLifecycle{out}
	}
	if len(unknown) > 0 {
		sink = &warnFirst{out: sink, warning: "resume entries for unknown or expired interrupts were ignored: " + strings.Join(unknown, ", ")}
	}
	// The resumed segment joins the resume request's trace, as a new run
	// joins its request's.
	_, _ = a.s.goOn(forwardedTrace(r.Context(), in.ForwardedProps), res, sink, in.ThreadID, in.RunID)
}

// subagentEvents reports whether the client opted in to SUBAGENT_STARTED,
// SUBAGENT_FINISHED and SUBAGENT_ERROR, which AG-UI asks producers to send
// only on request (older clients reject unknown event types):
// forwardedProps.ruleagent.subagentEvents = true, or ?subagentEvents=true.
func subagentEvents(r *http.Request, forwarded json.RawMessage) bool {
	if r.URL.Query().Get("subagentEvents") == "true" {
		return true
	}
	return len(forwarded) > 0 && gjson.GetBytes(forwarded, "ruleagent.subagentEvents").Bool()
}

// withoutSubagentLifecycle drops the SUBAGENT_* lifecycle events; the
// sub-agents' own events keep their subagentRunId attribution.
type withoutSubagentLifecycle struct{ out events.Sink }

func (f withoutSubagentLifecycle) Emit(e events.Event) {
	switch e.Type {
	case events.SubagentStarted, events.SubagentFinished, events.SubagentError:
		return
	}
	f.out.Emit(e)
}

// warnFirst sends a CUSTOM ruleagent.warning event right after RUN_STARTED.
type warnFirst struct {
	out     events.Sink
	warning string
	sent    bool
}

func (w *warnFirst) Emit(e events.Event) {
	w.out.Emit(e)
	if !w.sent && e.Type == events.RunStarted {
		w.sent = true
		v, _ := json.Marshal(map[string]string{"message": w.warning})
		w.out.Emit(events.Event{Type: events.Custom, Name: "ruleagent.warning", Value: v, Timestamp: e.Timestamp})
	}
}
