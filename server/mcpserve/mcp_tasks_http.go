package mcpserve

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/sse"
)

// taskRequest is what the tasks methods read of a request.
type taskRequest struct {
	Method string `json:"method"`
	Params struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		Meta           *mcp.Meta                  `json:"_meta"`
		// Notifications is the filter of subscriptions/listen.
		Notifications *listenFilter `json:"notifications"`
	} `json:"params"`
}

// serveHTTP answers tasks/get, tasks/update, tasks/cancel and a
// subscriptions/listen for tasks of a 2026-07-28 request (mcp-go v1.2.1
// knows only the tasks of 2025-11-25, whose wire differs). It reports
// false for anything else, which mcp-go answers: another method, a legacy request, a request whose protocol
// version header and _meta disagree or name a version not served (mcp-go
// answers those with their errors), and tasks/result and tasks/list, which
// the extension removed (-32601).
func (m *mcpTasks) serveHTTP(w http.ResponseWriter, r *http.Request, body []byte, id json.RawMessage) bool {
	var req taskRequest
	if json.Unmarshal(body, &req) != nil || !req.ours() {
		return false
	}
	if r.Header.Get(mcp.HeaderProtocolVersion) != req.Params.Meta.ProtocolVersion() {
		return false
	}
	answer := func(result any, perr *ProtocolError) {
		w.Header().Set("Content-Type", "application/json")
		if perr != nil {
			w.WriteHeader(taskErrorStatus(perr.Code))
			_, _ = w.Write(perr.response(id))
			return
		}
		raw, _ := json.Marshal(result)
		_, _ = w.Write(resultResponse(id, raw))
	}
	// Routing headers (SEP-2243, SEP-2663): required, and they must
	// match the body, as mcp-go requires of the other methods.
	if h := r.Header.Get(mcp.HeaderMethod); h != req.Method {
		answer(nil, &ProtocolError{Code: mcp.HEADER_MISMATCH, Message: "the Mcp-Method header " + strconv.Quote(h) + " does not match the request's method " + req.Method})
		return true
	}
	if req.Method == string(mcp.MethodSubscriptionsListen) {
		if !declaresTasks(req.Params.Meta) {
			answer(nil, missingTasksExtension("task notifications on subscriptions/listen"))
			return true
		}
		m.serveListen(w, r, id, req.Params.Notifications.TaskIDs)
		return true
	}
	if h := r.Header.Get(mcp.HeaderName); h != req.Params.TaskID {
		answer(nil, &ProtocolError{Code: mcp.HEADER_MISMATCH, Message: "the Mcp-Name header " + strconv.Quote(h) + " does not match params.taskId"})
		return true
	}
	answer(m.answer(r.Context(), req, identity.From(r.Context())))
	return true
}

// ours reports whether the tasks endpoint serves the request (on either
// transport): tasks/get, tasks/update, tasks/cancel, and a
// subscriptions/listen for tasks (mcp-go knows no taskIds: any other
// listen is its), of a 2026-07-28 request. Anything else is mcp-go's.
func (req *taskRequest) ours() bool {
	switch req.Method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	case string(mcp.MethodSubscriptionsListen):
		if req.Params.Notifications == nil || req.Params.Notifications.TaskIDs == nil {
			return false
		}
	default:
		return false
	}
	return mcp.IsModernProtocol(req.Params.Meta.ProtocolVersion())
}

// answer is the result of tasks/get, tasks/update or tasks/cancel, for
// caller p, or its error.
func (m *mcpTasks) answer(ctx context.Context, req taskRequest, p identity.Principal) (any, *ProtocolError) {
	if !declaresTasks(req.Params.Meta) {
		return nil, missingTasksExtension(req.Method)
	}
	if req.Params.TaskID == "" {
		return nil, &ProtocolError{Code: CodeInvalidParams, Message: "params.taskId is required"}
	}
	var err error
	switch req.Method {
	case "tasks/get":
		t, err := m.find(ctx, req.Params.TaskID, p)
		if err != nil {
			return nil, err.(*ProtocolError)
		}
		w := taskWire(t, "complete")
		w["_meta"] = m.meta
		return w, nil
	case "tasks/cancel":
		err = m.cancel(ctx, req.Params.TaskID, p)
	case "tasks/update":
		err = m.update(ctx, req.Params.TaskID, p, req.Params.InputResponses)
	}
	if err != nil {
		return nil, err.(*ProtocolError)
	}
	return map[string]any{"resultType": "complete", "_meta": m.meta}, nil
}

// missingTasksExtension is the -32021 of a request for what needs the
// tasks extension from a client that did not declare it.
func missingTasksExtension(what string) *ProtocolError {
	return &ProtocolError{Code: CodeMissingCapability,
		Message: what + " needs the " + TasksExtension + " extension, which the request's clientCapabilities do not declare",
		Data:    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}}}
}

// serveListen answers a subscriptions/listen request for task
// notifications with an event stream (see mcpTasks.listen), closed with
// the request's result when every task it watches has ended or the server
// ends it. The stream is the server's (package sse): a heartbeat after
// 15 s of silence keeps proxies from cutting a quiet stream, and a client
// that stops reading is dropped.
func (m *mcpTasks) serveListen(w http.ResponseWriter, r *http.Request, id json.RawMessage, ids []string) {
	out := sse.Start(w, sse.DefaultHeartbeat, nil)
	defer out.Close()
	if m.listen(r.Context(), id, ids, identity.From(r.Context()), out.Data) {
		_ = out.Data(m.listenResult(id))
	}
}

// declaresTasks reports whether a request's clientCapabilities declare the
// tasks extension.
func declaresTasks(meta *mcp.Meta) bool {
	if meta == nil {
		return false
	}
	raw, ok := meta.AdditionalFields[mcp.MetaKeyClientCapabilities]
	if !ok {
		return false
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return false
	}
	var caps mcp.ClientCapabilities
	if json.Unmarshal(b, &caps) != nil {
		return false
	}
	_, ok = caps.Extensions[TasksExtension]
	return ok
}

// taskErrorStatus is the HTTP status 2026-07-28 gives an error answer.
func taskErrorStatus(code int) int {
	if code == CodeInternal {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
