package mcptool

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// ActivityType is the activityType of the AG-UI activity that shows a
// remote tool's progress.
const ActivityType = "mcp_progress"

// Every call asks the server for progress (a progressToken in its _meta).
// What the server reports becomes an AG-UI activity in the calling run's
// event stream, shown beside the transcript: ACTIVITY_SNAPSHOT at the first
// report, with content
//
//	{"server": "fs", "tool": "search", "toolCallId": "c1", "status": "running",
//	 "progress": 3, "total": 10, "message": "scanned 3 of 10 folders"}
//
// (total and message when the server gives them), then an ACTIVITY_DELTA
// (a JSON Patch) per report, and a last delta setting status to "done" or
// "failed" when the call returns. A call the server reports nothing about
// makes no activity.

// progressCalls routes notifications/progress to the call whose token they
// carry. Tokens are unique per conn; a report after its call returned is
// dropped.
type progressCalls struct {
	seq   atomic.Int64
	calls sync.Map // token string -> *callProgress
}

// start registers a call and returns its token.
func (p *progressCalls) start(ctx context.Context, server, tool string) (string, *callProgress) {
	token := server + "-" + strconv.FormatInt(p.seq.Add(1), 10)
	cp := &callProgress{server: server, tool: tool, id: "mcp-progress-" + token}
	if ci := tools.CallFrom(ctx); ci != nil {
		cp.toolCallID = ci.ToolCallID
		if ci.ToolCallID != "" {
			cp.id = "mcp-progress-" + ci.ToolCallID
		}
		cp.sink = ci.EventSink()
	}
	if cp.sink == nil {
		cp.sink = events.SinkFrom(ctx)
	}
	p.calls.Store(token, cp)
	return token, cp
}

// end unregisters a call and closes its activity.
func (p *progressCalls) end(token string, cp *callProgress, failed bool) {
	p.calls.Delete(token)
	cp.finish(failed)
}

// notify handles a notifications/progress.
func (p *progressCalls) notify(n mcp.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	token, ok := f["progressToken"].(string)
	if !ok {
		return
	}
	if cp, ok := p.calls.Load(token); ok {
		cp.(*callProgress).report(f)
	}
}

// callProgress is one call's activity.
type callProgress struct {
	sink                     events.Sink
	server, tool, toolCallID string
	id                       string // the activity's messageId

	mu      sync.Mutex
	started bool
	ended   bool
}

// report emits a server's progress report: the snapshot first, deltas after.
func (cp *callProgress) report(f map[string]any) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.ended || cp.sink == nil {
		return
	}
	progress, ok := number(f["progress"])
	if !ok {
		return // not a progress report the protocol allows
	}
	if !cp.started {
		cp.started = true
		content := map[string]any{"server": cp.server, "tool": cp.tool, "status": "running", "progress": progress}
		if cp.toolCallID != "" {
			content["toolCallId"] = cp.toolCallID
		}
		for _, k := range []string{"total", "message"} {
			if v, ok := f[k]; ok {
				content[k] = v
			}
		}
		b, _ := json.Marshal(content)
		cp.emit(events.ActivitySnapshot, b)
		return
	}
	patch := []map[string]any{{"op": "replace", "path": "/progress", "value": progress}}
	for _, k := range []string{"total", "message"} {
		if v, ok := f[k]; ok {
			// "add" sets a member whether or not it exists yet.
			patch = append(patch, map[string]any{"op": "add", "path": "/" + k, "value": v})
		}
	}
	b, _ := json.Marshal(patch)
	cp.emit(events.ActivityDelta, b)
}

// finish marks the activity done (or failed), when there is one.
func (cp *callProgress) finish(failed bool) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.ended {
		return
	}
	cp.ended = true
	if !cp.started {
		return
	}
	status := "done"
	if failed {
		status = "failed"
	}
	b, _ := json.Marshal([]map[string]any{{"op": "replace", "path": "/status", "value": status}})
	cp.emit(events.ActivityDelta, b)
}

// emit sends an activity event. The caller holds cp.mu, which keeps the
// events of one activity in order.
func (cp *callProgress) emit(t events.Type, body json.RawMessage) {
	e := events.Event{Type: t, MessageID: cp.id, ActivityType: ActivityType,
		Meta: events.Meta{ToolType: tools.TypeMCP, ToolCallID: cp.toolCallID}}
	if t == events.ActivitySnapshot {
		e.Activity = body
	} else {
		e.Patch = body
	}
	cp.sink.Emit(e)
}

// number reads a JSON number, decoded (float64) or as a server in the same
// process handed it over.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
