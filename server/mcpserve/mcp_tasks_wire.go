package mcpserve

import (
	"encoding/json"
	"time"

	"github.com/ruleagent/ruleagent/state/tasks"
)

// CodeInternal is JSON-RPC's internal error: a task that failed for a
// reason that is not the tool's (a shutdown, an input timeout, its store).
const CodeInternal = -32603

// taskWire is a task as the extension puts it on the wire: a flat Result &
// Task, with resultType "task" (a CreateTaskResult) or "complete" (the
// DetailedTask of tasks/get, which inlines the result, the error or the
// questions). Durations are integer milliseconds.
func taskWire(t *tasks.Task, resultType string) map[string]any {
	w := map[string]any{
		"resultType":     resultType,
		"taskId":         t.ID,
		"status":         string(t.Status),
		"createdAt":      t.Created.UTC().Format(time.RFC3339Nano),
		"lastUpdatedAt":  changed(t).UTC().Format(time.RFC3339Nano),
		"ttlMs":          t.TTL.Milliseconds(),
		"pollIntervalMs": taskPollInterval.Milliseconds(),
	}
	if t.Message != "" {
		w["statusMessage"] = t.Message
	}
	if resultType == "task" {
		return w
	}
	switch t.Status {
	case tasks.Completed:
		w["result"] = t.Result
	case tasks.Failed:
		w["error"] = t.Error
	case tasks.InputRequired:
		w["inputRequests"] = t.InputRequests
	}
	return w
}

// resultWire is a tool outcome as a CallToolResult.
func resultWire(out ToolOutcome) map[string]any {
	res := map[string]any{"content": []any{map[string]any{"type": "text", "text": out.Text}}}
	if out.IsError {
		res["isError"] = true
	}
	if out.Structured != nil {
		res["structuredContent"] = out.Structured
	}
	if len(out.Meta) > 0 {
		res["_meta"] = out.Meta
	}
	return res
}

// wire is the error as a JSON-RPC error object.
func (e *ProtocolError) wire() json.RawMessage {
	m := map[string]any{"code": e.Code, "message": e.Message}
	if e.Data != nil {
		m["data"] = e.Data
	}
	raw, _ := json.Marshal(m)
	return raw
}

// changed is when a task's status last changed.
func changed(t *tasks.Task) time.Time {
	if t.Changed.IsZero() {
		return t.Created
	}
	return t.Changed
}
