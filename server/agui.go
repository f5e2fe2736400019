package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
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
	Resume          json.RawMessage      `json:"resume"`
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
	if msgs := bytes.TrimSpace(in.Messages); len(msgs) == 0 || msgs[0] != '[' {
		writeError(w, http.StatusBadRequest, `RunAgentInput needs "messages": an array of AG-UI messages`)
		return
	}
	if _, ok := a.s.Engine(id); !ok {
		writeError(w, http.StatusNotFound, "no chain "+quote(id)+" is deployed")
		return
	}
	in.ThreadID = cmpOrID(in.ThreadID, "thread-")
	in.RunID = cmpOrID(in.RunID, "run-")
	if _, busy := a.s.runs.Get(in.RunID); busy {
		writeError(w, http.StatusConflict, "run "+quote(in.RunID)+" is already in progress")
		return
	}
	for i, t := range in.Tools {
		if t.Name == "" {
			writeError(w, http.StatusBadRequest, "tools["+strconv.Itoa(i)+"] has no name")
			return
		}
	}
	caller := &agent.Caller{Tools: in.Tools, Context: in.Context, State: in.State}
	md := map[string]string{"source": "agui"}
	if in.ParentRunID != "" {
		md["parentRunId"] = in.ParentRunID
	}
	out := sse.Start(w, a.heartbeat, map[string]string{"X-Run-Id": in.RunID, "X-Thread-Id": in.ThreadID})
	defer out.Close()
	var sink events.Sink = out
	if !subagentEvents(r, in.ForwardedProps) {
		sink = withoutSubagentLifecycle{out}
	}
	_, err := a.s.Run(r.Context(), RunRequest{ChainID: id, Input: `{"messages":` + string(in.Messages) + `}`, Metadata: md,
		ThreadID: in.ThreadID, RunID: in.RunID, Source: "agui", Caller: caller, Sink: sink})
	if err != nil && !errors.As(err, new(*RunFailure)) {
		// The run never started (a run id taken in between): say so in
		// the stream the client is reading.
		out.Emit(events.Event{Type: events.RunError, Message: err.Error(), Code: "run_not_started"})
	}
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
