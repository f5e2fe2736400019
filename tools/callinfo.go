package tools

import (
	"context"

	"github.com/ruleagent/ruleagent/events"
)

// CallInfo identifies one tool call: which run, thread and node it belongs to.
// The wrapper puts it in the call's context; tools read it with CallFrom, for
// example to keep per-session state such as edit backups apart.
type CallInfo struct {
	RunID      string
	ThreadID   string
	ToolCallID string
	ToolName   string
	ChainID    string
	NodeID     string
	UserID     string
	// Run is the run's shared state (bound parameter values, the event
	// sink, limits), for tools that run more of the agent: chain tools and
	// sub-agents.
	Run *Run
	// Events, when set, receives the call's own events instead of
	// Run.Sink (see EventSink): a CallTap that records them.
	Events events.Sink
}

// SessionKey is the key under which per-session tool state is kept: the
// thread id when the caller gave one, otherwise the run id.
func (c *CallInfo) SessionKey() string {
	if c == nil {
		return ""
	}
	if c.ThreadID != "" {
		return c.ThreadID
	}
	return c.RunID
}

type callInfoKey struct{}

// WithCall returns ctx carrying info.
func WithCall(ctx context.Context, info *CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallFrom returns the CallInfo in ctx, or nil. The methods of a nil
// *CallInfo are safe to call.
func CallFrom(ctx context.Context) *CallInfo {
	c, _ := ctx.Value(callInfoKey{}).(*CallInfo)
	return c
}
