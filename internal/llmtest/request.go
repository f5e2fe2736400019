package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Request is one request the server received, parsed so scripts and assertions
// can read it without decoding JSON themselves.
type Request struct {
	Path   string
	Header http.Header
	// Body is the raw request body, exactly as sent.
	Body []byte
	// JSON is the decoded body, for asserting parameters the typed fields do not
	// cover: JSON["temperature"], nested extra fields such as JSON["thinking"].
	JSON         map[string]any
	Model        string
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
	Messages     []Message
	Tools        []ToolDef

	// aborted is set when the client went away before the answer was
	// complete (a cancelled run, a timeout, a closed connection).
	aborted atomic.Bool
}

// Aborted reports whether the client went away before the answer was
// complete.
func (r *Request) Aborted() bool { return r.aborted.Load() }

// Message is one entry of the request's messages array.
type Message struct {
	Role string
	// Content is the message text. When the content was an array of parts, it
	// is the text of the "text" parts joined together, and ContentParts holds
	// the parts as sent.
	Content          string
	Name             string
	ToolCallID       string
	ReasoningContent string
	ContentParts     []map[string]any
	ToolCalls        []ToolCall
}

// ToolDef is one function tool the request offered the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a function call made by the model: scripted in a Response, or
// sent back in an assistant message of a later request.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Turn is the number of assistant messages in the conversation: 0 on the first
// LLM call of a run, 1 after the model has answered once, and so on.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// LastUserText is the text of the last user message, or "" when there is none.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// System is the text of the system messages joined by newlines. Messages with
// the "developer" role count too: newer clients send the system prompt that way.
func (r *Request) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolResults are the tool messages after the last assistant message: the
// results the client is reporting for the calls the model made last.
func (r *Request) ToolResults() []Message {
	start := 0
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "assistant" {
			start = i + 1
			break
		}
	}
	var results []Message
	for _, m := range r.Messages[start:] {
		if m.Role == "tool" {
			results = append(results, m)
		}
	}
	return results
}

// ToolNames are the names of the offered tools, in request order.
func (r *Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// badRequest is why the server refuses a request; param names the offending
// field as OpenAI's error body does.
type badRequest struct {
	message string
	param   string
}

// wireRequest is the subset of the chat-completions body the typed fields come
// from. Decoding into it also type-checks those fields, so a client that sends
// "stream": "yes" gets a 400 instead of a silently ignored flag.
type wireRequest struct {
	Model         *string `json:"model"`
	Stream        bool    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages *[]wireMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

type wireMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Name             string          `json:"name"`
	ToolCallID       string          `json:"tool_call_id"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []wireToolCall  `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseBody fills the decoded fields of req from req.Body. It fails the way
// the real API does on a body that is not a JSON object or lacks the
// required model and messages.
func parseBody(req *Request) *badRequest {
	if len(req.Body) == 0 {
		return &badRequest{message: "llmtest: the request has no body; expected a JSON object"}
	}
	if err := json.Unmarshal(req.Body, &req.JSON); err != nil || req.JSON == nil {
		return &badRequest{message: fmt.Sprintf("llmtest: the request body is not a JSON object: %v", errOrNull(err))}
	}
	var wire wireRequest
	if err := json.Unmarshal(req.Body, &wire); err != nil {
		return &badRequest{message: "llmtest: invalid request body: " + err.Error(), param: jsonFieldOf(err)}
	}
	if wire.Model == nil || *wire.Model == "" {
		return &badRequest{message: "llmtest: you must provide a model parameter", param: "model"}
	}
	if wire.Messages == nil {
		return &badRequest{message: "llmtest: missing required parameter: 'messages'", param: "messages"}
	}
	req.Model = *wire.Model
	req.Stream = wire.Stream
	req.IncludeUsage = wire.StreamOptions != nil && wire.StreamOptions.IncludeUsage
	for i, wm := range *wire.Messages {
		m, err := wm.toMessage()
		if err != nil {
			return &badRequest{message: fmt.Sprintf("llmtest: messages[%d].content: %v", i, err), param: fmt.Sprintf("messages[%d].content", i)}
		}
		req.Messages = append(req.Messages, m)
	}
	for _, t := range wire.Tools {
		req.Tools = append(req.Tools, ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return nil
}

func (wm wireMessage) toMessage() (Message, error) {
	m := Message{Role: wm.Role, Name: wm.Name, ToolCallID: wm.ToolCallID, ReasoningContent: wm.ReasoningContent}
	for _, tc := range wm.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	content := strings.TrimSpace(string(wm.Content))
	switch {
	case content == "" || content == "null":
	case content[0] == '"':
		if err := json.Unmarshal(wm.Content, &m.Content); err != nil {
			return m, err
		}
	case content[0] == '[':
		if err := json.Unmarshal(wm.Content, &m.ContentParts); err != nil {
			return m, err
		}
		var text strings.Builder
		for _, part := range m.ContentParts {
			if part["type"] == "text" {
				s, _ := part["text"].(string)
				text.WriteString(s)
			}
		}
		m.Content = text.String()
	default:
		return m, errors.New("content must be a string, an array of parts or null")
	}
	return m, nil
}

// jsonFieldOf names the field a type error is about, for the error's param.
func jsonFieldOf(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return typeErr.Field
	}
	return ""
}

func errOrNull(err error) string {
	if err == nil {
		return "got null"
	}
	return err.Error()
}
