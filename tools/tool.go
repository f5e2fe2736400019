// Package tools holds the agent's hands: the Tool interface, the registry of
// built-in tool definitions, the parsing of a node's JSON tools array, and the
// VisualToolWrapper that every call goes through.
//
// It knows nothing of RuleGo. Chain-backed tools reach the rule engine through
// the ChainInvoker interface, which the components package implements.
package tools

import (
	"context"
	"encoding/json"
)

// Info is what the model sees of a tool.
type Info struct {
	// Name is the function name the model calls. It matches ^[a-zA-Z0-9_-]{1,64}$.
	Name string `json:"name"`
	// Description tells the model when to call the tool.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage `json:"parameters"`
}

// Tool is one capability the model can call. Like http.Handler it has a
// single call method, so decorators compose around it.
//
// Call receives the arguments as JSON and returns what the model reads. A
// returned error is not fatal to the run: the wrapper turns it into a tool
// result the model can react to, and marks it as an error in events and
// metrics. Use the typed errors of this package (Errorf) so callers and
// policies can tell a refusal from a failure.
type Tool interface {
	Info() Info
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is the outcome of a successful call.
type Result struct {
	// Text is what the model reads.
	Text string `json:"text"`
	// Parts carries rich content (images, embedded resources) for clients
	// that can show it. The model still reads Text.
	Parts []Part `json:"parts,omitempty"`
	// Structured is optional machine-readable output (MCP structuredContent).
	Structured json.RawMessage `json:"structured,omitempty"`
	// IsError reports a failure the tool itself detected and described in
	// Text (MCP isError). It is shown to the model like any result, and
	// marked as an error in events and metrics.
	IsError bool `json:"isError,omitempty"`
}

// Part is one piece of rich tool output.
type Part struct {
	// Type is "text", "image", "audio" or "resource".
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// Data is base64 content for images and audio.
	Data string `json:"data,omitempty"`
	// URI names a resource.
	URI string `json:"uri,omitempty"`
}

// TextResult is a convenience for the common case.
func TextResult(s string) Result { return Result{Text: s} }

// Func adapts a function to the Tool interface.
type Func struct {
	Spec Info
	Fn   func(ctx context.Context, args json.RawMessage) (Result, error)
}

// Info implements Tool.
func (f Func) Info() Info { return f.Spec }

// Call implements Tool.
func (f Func) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return f.Fn(ctx, args)
}

// PromptContributor is implemented by tools that add text to the agent's
// system prompt, such as the skill tool listing the available skills. The
// engine asks once per run, so changes on disk show up on the next run.
type PromptContributor interface {
	SystemPrompt(ctx context.Context) string
}
