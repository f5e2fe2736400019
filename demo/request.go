package demo

import (
	"encoding/json"
	"strings"
)

// Request is the part of a chat-completions request the demo reads.
type Request struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Tools          []Tool          `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Stream         bool            `json:"stream"`
	StreamOptions  *streamOptions  `json:"stream_options"`
	ResponseFormat *responseFormat `json:"response_format"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// Message is one chat message; Content is a string or an array of parts.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is an offered function.
type Tool struct {
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Text is a message's text: the string, or its text parts joined.
func (m *Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// system is the system prompt: every system (or developer) message, joined.
func (r *Request) system() string {
	var parts []string
	for i := range r.Messages {
		if m := &r.Messages[i]; m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Text())
		}
	}
	return strings.Join(parts, "\n")
}

// lastUser is the index of the last user message, -1 when there is none.
func (r *Request) lastUser() int {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return i
		}
	}
	return -1
}

// toolResult is a tool's answer in the conversation.
type toolResult struct {
	Name, Arguments, Content string
}

// resultsAfter lists the tool results that follow message i, named after
// the calls that asked for them.
func (r *Request) resultsAfter(i int) []toolResult {
	calls := map[string]ToolCall{}
	var out []toolResult
	for _, m := range r.Messages[i+1:] {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c
		}
		if m.Role == "tool" {
			c := calls[m.ToolCallID]
			name := c.Function.Name
			if name == "" {
				name = m.ToolCallID
			}
			out = append(out, toolResult{Name: name, Arguments: c.Function.Arguments, Content: m.Text()})
		}
	}
	return out
}

// toolsAllowed reports whether the request lets the model call tools.
func (r *Request) toolsAllowed() bool {
	if len(r.Tools) == 0 {
		return false
	}
	var choice string
	return json.Unmarshal(r.ToolChoice, &choice) != nil || choice != "none"
}

// jsonAnswer reports whether the request asks for JSON, and its schema.
func (r *Request) jsonAnswer() (bool, json.RawMessage) {
	f := r.ResponseFormat
	if f == nil {
		return false, nil
	}
	switch f.Type {
	case "json_object":
		return true, nil
	case "json_schema":
		if f.JSONSchema != nil {
			return true, f.JSONSchema.Schema
		}
		return true, nil
	}
	return false, nil
}
