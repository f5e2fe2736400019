package mcpserve

import (
	"context"
	"encoding/json"

	"github.com/ruleagent/ruleagent/tools/ask"
)

// The chain tools (and the catalog tools) speak to their MCP clients
// through the types of this file only. mcp_gosdk.go binds them to
// github.com/mark3labs/mcp-go: another MCP library would need another such
// file, and nothing in the tools, the runs or the store would change.

// ToolCall is one tools/call, whatever library carried it.
type ToolCall struct {
	// Args are the call's arguments as JSON ("{}" when none).
	Args json.RawMessage
	// Progress is the client's progressToken, nil when it asked for none.
	Progress any
	// Modern reports a 2026-07-28 (or later) request: stateless, no
	// server-initiated requests; a question becomes input_required.
	Modern bool
	// CanElicit reports that the client declared the elicitation
	// capability: on this request (modern) or at initialize (legacy).
	CanElicit bool
	// Responses are the client's answers (inputResponses) by question
	// key, as they came; State is the requestState it echoes. Both are
	// empty on a first call.
	Responses map[string]json.RawMessage
	State     string
	// Peer reaches the client while the call runs.
	Peer mcpPeer
	// Tasks reports that the client declared the tasks extension
	// (io.modelcontextprotocol/tasks) on this request: a chain tool then
	// answers with a task (see mcpTasks).
	Tasks bool
}

// mcpPeer is what a running call may do to its client.
type mcpPeer interface {
	// progress sends notifications/progress for token. It never blocks.
	progress(token any, n int, message string)
	// elicit asks the client's user a question with a server-initiated
	// elicitation/create (2025-11-25 and earlier clients only).
	elicit(ctx context.Context, q ask.Question) (ask.Answer, error)
}

// ToolOutcome is the answer to a call: a result, a request for input, or
// a protocol error.
type ToolOutcome struct {
	// Text is the result's text content; Structured, when set, its
	// structuredContent (any JSON value).
	Text       string
	Structured any
	// Meta is the result's _meta.
	Meta    map[string]any
	IsError bool

	// Questions, when set, make the outcome input_required: the client
	// answers each under its key and retries with State.
	Questions []ask.Question
	State     string

	// Err, when set, is answered as a JSON-RPC error instead of a result.
	Err *ProtocolError
	// Raw, when set, is the result as it goes on the wire: one the MCP
	// library cannot express (a CreateTaskResult of the tasks extension).
	Raw json.RawMessage
}

// ProtocolError is a JSON-RPC error a tool call is answered with.
type ProtocolError struct {
	Code    int
	Message string
	Data    any
}

func (e *ProtocolError) Error() string { return e.Message }

// The JSON-RPC error codes the chain tools answer with.
const (
	// CodeInvalidParams: a requestState that fails its check, or answers
	// that are not answers.
	CodeInvalidParams = -32602
	// CodeMissingCapability: the chain asked a 2026-07-28 client for
	// input, and the client did not declare elicitation.
	CodeMissingCapability = -32021
)

func textOutcome(text string) ToolOutcome { return ToolOutcome{Text: text} }

func errorOutcome(text string) ToolOutcome { return ToolOutcome{Text: text, IsError: true} }

// structuredOutcome carries v both as structured content and as its JSON
// text, for clients that read only text.
func structuredOutcome(v any) ToolOutcome {
	b, err := json.Marshal(v)
	if err != nil {
		return errorOutcome(err.Error())
	}
	return ToolOutcome{Text: string(b), Structured: v}
}

// toolHost is where tools are published: the MCP server library. Setting
// a tool that exists replaces it; the host tells clients that the list
// changed.
type toolHost interface {
	setTool(def toolDef, run func(context.Context, ToolCall) ToolOutcome)
	removeTool(name string)
}

// toolDef is a tool as clients list it.
type toolDef struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Hints, nil when unknown.
	ReadOnly    *bool `json:"readOnly,omitempty"`
	Destructive *bool `json:"destructive,omitempty"`
	OpenWorld   *bool `json:"openWorld,omitempty"`
}
