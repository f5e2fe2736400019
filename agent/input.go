package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/events"
)

// ParseInput reads a run's input from a message body:
//   - plain text: one user message;
//   - {"message": "..."}: one user message;
//   - {"messages": [...]}: a conversation of OpenAI chat messages (role,
//     content as a string or parts, tool_calls, tool_call_id, name) or
//     AG-UI messages (toolCalls, toolCallId, image parts with a source);
//   - any other JSON: the JSON text as one user message.
//
// Images are passed on as URLs (http, https or data:); local paths are
// refused, so input can never make the server read its own files.
func ParseInput(data []byte) ([]events.Message, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the input is empty")
	}
	in, _ := chatRequest(data) // zero when data is not one
	switch {
	case in.Messages != nil:
		return ParseMessages(in.Messages)
	case in.Message != nil:
		if strings.TrimSpace(*in.Message) == "" {
			return nil, fmt.Errorf(`the input's "message" is empty`)
		}
		return []events.Message{{Role: events.RoleUser, Content: *in.Message}}, nil
	}
	return []events.Message{{Role: events.RoleUser, Content: string(data)}}, nil
}

// chatIn is a chat request: a JSON object with "messages" or "message".
type chatIn struct {
	Message  *string           `json:"message"`
	Messages []json.RawMessage `json:"messages"`
}

// chatRequest reads data as a chat request; ok is false for anything
// else (text, other JSON).
func chatRequest(data []byte) (in chatIn, ok bool) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &in) != nil {
		return chatIn{}, false
	}
	return in, in.Messages != nil || in.Message != nil
}

// IsConversation reports whether data is a chat request, which ParseInput
// reads as the conversation itself.
func IsConversation(data []byte) bool {
	_, ok := chatRequest(data)
	return ok
}

type wireMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCalls2 []wireToolCall  `json:"toolCalls"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCallI2 string          `json:"toolCallId"`
	Reasoning  string          `json:"reasoning_content"`
	// SubagentRunID marks an AG-UI message a sub-agent produced.
	SubagentRunID string `json:"subagentRunId"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wirePart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL *struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
	Source *struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
}

// ParseMessages parses OpenAI or AG-UI chat messages.
func ParseMessages(raw []json.RawMessage) ([]events.Message, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf(`"messages" is empty`)
	}
	out := make([]events.Message, 0, len(raw))
	for i, r := range raw {
		var w wireMessage
		if err := json.Unmarshal(r, &w); err != nil {
			return nil, fmt.Errorf("messages[%d]: %v", i, err)
		}
		if w.SubagentRunID != "" || w.Role == "activity" || w.Role == "reasoning" {
			// An AG-UI client keeps what it was shown: sub-agents' messages,
			// progress and reasoning. None of it is the conversation the
			// model had; the answers that came of it are.
			continue
		}
		m := events.Message{ID: w.ID, Role: events.Role(w.Role), Name: w.Name, ToolCallID: w.ToolCallID, Reasoning: w.Reasoning}
		if m.ToolCallID == "" {
			m.ToolCallID = w.ToolCallI2
		}
		switch m.Role {
		case events.RoleSystem, events.RoleDeveloper, events.RoleUser, events.RoleAssistant, events.RoleTool:
		case "":
			return nil, fmt.Errorf("messages[%d]: missing role", i)
		default:
			return nil, fmt.Errorf("messages[%d]: unsupported role %q", i, w.Role)
		}
		if err := parseContent(&m, w.Content); err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		for _, tc := range append(w.ToolCalls, w.ToolCalls2...) {
			if tc.Function.Name == "" {
				return nil, fmt.Errorf("messages[%d]: a tool call has no function name", i)
			}
			m.ToolCalls = append(m.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if m.Role == events.RoleTool && m.ToolCallID == "" {
			return nil, fmt.Errorf("messages[%d]: a tool message needs tool_call_id", i)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf(`"messages" holds no conversation message (user, assistant, tool, system or developer)`)
	}
	return out, nil
}

func parseContent(m *events.Message, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &m.Content)
	}
	var parts []wirePart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("want a string or an array of parts")
	}
	var text []string
	for j, p := range parts {
		switch p.Type {
		case "text", "input_text":
			m.Parts = append(m.Parts, events.ContentPart{Type: "text", Text: p.Text})
			text = append(text, p.Text)
		case "image_url", "image":
			url, detail := "", ""
			switch {
			case p.ImageURL != nil:
				url, detail = p.ImageURL.URL, p.ImageURL.Detail
			case p.Source != nil && p.Source.Type == "url":
				url = p.Source.Value
			case p.Source != nil && p.Source.Type == "data":
				mt := p.Source.MimeType
				if mt == "" {
					mt = "image/png"
				}
				url = "data:" + mt + ";base64," + p.Source.Value
			}
			if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "data:image/") {
				return fmt.Errorf("part %d: an image must be an http(s) URL or a data:image URL", j)
			}
			m.Parts = append(m.Parts, events.ContentPart{Type: "image", URL: url, Detail: detail})
		default:
			return fmt.Errorf("part %d: unsupported type %q", j, p.Type)
		}
	}
	m.Content = strings.Join(text, "\n")
	if m.Role != events.RoleUser {
		// Only user messages may carry images; others keep their text.
		m.Parts = nil
	}
	return nil
}
