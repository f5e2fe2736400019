package agent

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/ruleagent/ruleagent/events"
)

// Caller is what the application that started a run adds to it, beyond the
// messages: tools it runs itself (AG-UI front-end tools, tools an OpenAI
// client offers), context for the model, and its state. It travels in the
// run's context.Context (WithCaller) from the server to the agent node of
// the chain the server started; rule-chain tools and sub-agents never see
// it (the chain invoker removes it), because their caller is the agent.
//
// The agent reports back through it the front-end tool calls the model
// made, which the run leaves for the application to answer.
type Caller struct {
	// Tools are offered to the model beside the agent's own. When the
	// model calls one, the run ends with the call pending (Pending).
	Tools []ClientTool
	// Context entries are appended to the system prompt.
	Context []ContextEntry
	// State is the application's state (any JSON), available to the chain
	// as message metadata "state" (see the server).
	State json.RawMessage

	mu      sync.Mutex
	pending []events.ToolCall
}

// ClientTool is a tool the calling application runs.
type ClientTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ContextEntry is one piece of context the application gives the model.
type ContextEntry struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

type callerKey struct{}

// WithCaller returns ctx carrying c; a nil c removes any caller.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller in ctx, or nil.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

// Pending returns the front-end tool calls the run left unanswered, in the
// order the model made them.
func (c *Caller) Pending() []events.ToolCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]events.ToolCall(nil), c.pending...)
}

func (c *Caller) addPending(calls []events.ToolCall) {
	c.mu.Lock()
	c.pending = append(c.pending, calls...)
	c.mu.Unlock()
}

// has reports whether name is one of the caller's tools.
func (c *Caller) has(name string) bool {
	if c == nil {
		return false
	}
	for i := range c.Tools {
		if c.Tools[i].Name == name {
			return true
		}
	}
	return false
}

// contextPrompt renders the context entries for the system prompt.
func (c *Caller) contextPrompt() string {
	if c == nil || len(c.Context) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Context from the application:")
	for _, e := range c.Context {
		b.WriteString("\n- ")
		if e.Description != "" {
			b.WriteString(e.Description)
			b.WriteString(": ")
		}
		b.WriteString(e.Value)
	}
	return b.String()
}

// toolsJSON returns the OpenAI tools array of the agent's own tools (own,
// already encoded) followed by the caller's tools whose names the agent's
// own tools do not take; the agent's own tool wins a name clash, so a
// front end can never replace a server tool.
func (c *Caller) toolsJSON(own []byte, taken func(string) bool) []byte {
	if c == nil || len(c.Tools) == 0 {
		return own
	}
	var extra []byte
	for _, t := range c.Tools {
		if t.Name == "" || taken(t.Name) {
			continue
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if len(extra) > 0 {
			extra = append(extra, ',')
		}
		extra = append(extra, `{"type":"function","function":{"name":`...)
		extra = events.AppendString(extra, t.Name)
		extra = append(extra, `,"description":`...)
		extra = events.AppendString(extra, t.Description)
		extra = append(extra, `,"parameters":`...)
		extra = append(extra, params...)
		extra = append(extra, `}}`...)
	}
	if len(extra) == 0 {
		return own
	}
	if len(own) <= 2 { // nil or "[]"
		return append(append([]byte{'['}, extra...), ']')
	}
	out := make([]byte, 0, len(own)+len(extra)+1)
	out = append(out, own[:len(own)-1]...)
	out = append(out, ',')
	out = append(out, extra...)
	return append(out, ']')
}
