package tools

import (
	"context"
	"encoding/json"

	"github.com/ruleagent/ruleagent/events"
)

// CallTap is given every tool call a run executes, when the run's context
// carries one (WithCallTap): the server's run recording keeps what each
// call returned (and the events it emitted), and a replay answers a call
// from the record instead of running it. It sits where the wrapper runs
// the tool (after validation, policy, approval and the before aspects;
// before scrubbing, truncation and the after aspects), so that everything
// around the call happens in a replay as it did.
type CallTap interface {
	// ToolCall returns the call's result: run's (the tool's), or its own.
	// ctx carries the call's CallInfo.
	ToolCall(ctx context.Context, c TapCall, run func(context.Context) (Result, error)) (Result, error)
}

// TapCall is a tool call as CallTap.ToolCall sees it.
type TapCall struct {
	// ID is the call's id in its agent run, Name the tool's name.
	ID   string
	Name string
	// Type is the tool type (builtin, rulechain, agent, mcp) and TargetID
	// the chain a rulechain or agent tool runs.
	Type     string
	TargetID string
	// Args are the arguments the call runs with.
	Args json.RawMessage
}

type callTapKey struct{}

// WithCallTap returns ctx carrying t for the tool calls under it.
func WithCallTap(ctx context.Context, t CallTap) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, callTapKey{}, t)
}

// callTool runs the tool of entry e, through the context's CallTap if it
// has one.
func callTool(ctx context.Context, e *Entry, c Call, args json.RawMessage) (Result, error) {
	t, _ := ctx.Value(callTapKey{}).(CallTap)
	if t == nil {
		return e.Tool.Call(ctx, args)
	}
	return t.ToolCall(ctx, TapCall{ID: c.ID, Name: c.Name, Type: e.Type, TargetID: e.TargetID, Args: args},
		func(ctx context.Context) (Result, error) { return e.Tool.Call(ctx, args) })
}

// EventSink is where the call's own events go (a rulechain tool's node
// steps, an MCP tool's progress): Events when set, else the run's sink;
// nil for none.
func (c *CallInfo) EventSink() events.Sink {
	switch {
	case c == nil:
		return nil
	case c.Events != nil:
		return c.Events
	case c.Run != nil:
		return c.Run.Sink
	}
	return nil
}
