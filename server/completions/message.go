package completions

import (
	"encoding/json"
	"strings"
)

// Request is the part of a chat-completions request ruleagent reads. The
// model's own parameters (temperature, ...) belong to the chain's agent
// and are not taken from the request.
type Request struct {
	Model         string            `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        bool              `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	// User identifies the end user (message metadata userId).
	User string `json:"user"`
	// ToolActivity, ruleagent's own field, shows (true) or hides (false)
	// the agent's tool calls as text in the content; the server's default
	// when absent.
	ToolActivity *bool `json:"tool_activity"`
	// Metadata is passed to the chain as message metadata (OpenAI's
	// stored-completions metadata: string values).
	Metadata map[string]string `json:"metadata"`
}

// Message collects deltas into the message of a non-streamed answer. It
// implements Deltas.
type Message struct {
	content   strings.Builder
	reasoning strings.Builder
	calls     []toolCall
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Content implements Deltas.
func (m *Message) Content(s string) { m.content.WriteString(s) }

// Reasoning implements Deltas.
func (m *Message) Reasoning(s string) { m.reasoning.WriteString(s) }

// ToolCall implements Deltas.
func (m *Message) ToolCall(_ int, id, name string) {
	tc := toolCall{ID: id, Type: "function"}
	tc.Function.Name = name
	m.calls = append(m.calls, tc)
}

// Arguments implements Deltas.
func (m *Message) Arguments(index int, s string) {
	if index < len(m.calls) {
		m.calls[index].Function.Arguments += s
	}
}

// HasContent reports whether any content was collected.
func (m *Message) HasContent() bool { return m.content.Len() > 0 }

// Completion is the whole `chat.completion` answer.
func (m *Message) Completion(id string, created int64, model, fallback, finish string, usage Usage) []byte {
	msg := map[string]any{"role": "assistant"}
	content := m.content.String()
	if content == "" {
		content = fallback
	}
	if content == "" && len(m.calls) > 0 {
		msg["content"] = nil
	} else {
		msg["content"] = content
	}
	if m.reasoning.Len() > 0 {
		msg["reasoning_content"] = m.reasoning.String()
	}
	if len(m.calls) > 0 {
		for i := range m.calls {
			if m.calls[i].Function.Arguments == "" {
				m.calls[i].Function.Arguments = "{}"
			}
		}
		msg["tool_calls"] = m.calls
	}
	msg["refusal"] = nil
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   usage,
	})
	return b
}
