package agent

import (
	"encoding/json"

	"github.com/ruleagent/ruleagent/events"
)

// Request is one chat-completions request.
type Request struct {
	Messages []events.Message
	// Tools is the encoded OpenAI tools array (tools.Set.ToolsJSON); nil
	// offers no tools.
	Tools []byte
	// NoTools asks the model not to call tools (the forced final turn):
	// tools are omitted and tool_choice is "none".
	NoTools bool
	// ParallelToolCalls, when set, is sent as parallel_tool_calls.
	ParallelToolCalls *bool
}

// bodyPrefix is the fixed part of a request body for one endpoint and
// mode, encoded once: the object without its closing brace.
type bodyPrefix []byte

func newBodyPrefix(fields map[string]any) (bodyPrefix, error) {
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	return bodyPrefix(b[:len(b)-1]), nil
}

// appendBody appends the whole request body for req to dst; echo says
// which assistant messages carry their reasoning back.
func (p bodyPrefix) appendBody(dst []byte, req *Request, echo reasoningEcho) []byte {
	dst = append(dst, p...)
	dst = append(dst, `,"messages":[`...)
	for i := range req.Messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, &req.Messages[i], echo)
	}
	dst = append(dst, ']')
	switch {
	case req.NoTools:
		if len(req.Tools) > 0 {
			// Some providers reject tool_choice without tools, and some
			// refuse tool messages without tools: offer them, forbid use.
			dst = append(dst, `,"tools":`...)
			dst = append(dst, req.Tools...)
			dst = append(dst, `,"tool_choice":"none"`...)
		}
	case len(req.Tools) > 2: // "[]" is no tools
		dst = append(dst, `,"tools":`...)
		dst = append(dst, req.Tools...)
		if req.ParallelToolCalls != nil {
			if *req.ParallelToolCalls {
				dst = append(dst, `,"parallel_tool_calls":true`...)
			} else {
				dst = append(dst, `,"parallel_tool_calls":false`...)
			}
		}
	}
	return append(dst, '}')
}

// appendMessage encodes one message in the OpenAI chat format.
func appendMessage(b []byte, m *events.Message, echo reasoningEcho) []byte {
	b = append(b, `{"role":`...)
	b = events.AppendString(b, string(m.Role))
	switch m.Role {
	case events.RoleAssistant:
		if m.Content != "" || len(m.ToolCalls) == 0 {
			b = append(b, `,"content":`...)
			b = events.AppendString(b, m.Content)
		} else {
			b = append(b, `,"content":null`...)
		}
		if echo.carries(m) {
			b = append(b, `,"reasoning_content":`...)
			b = events.AppendString(b, m.Reasoning)
		}
		if len(m.ToolCalls) > 0 {
			b = append(b, `,"tool_calls":[`...)
			for i, tc := range m.ToolCalls {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"id":`...)
				b = events.AppendString(b, tc.ID)
				b = append(b, `,"type":"function","function":{"name":`...)
				b = events.AppendString(b, tc.Name)
				b = append(b, `,"arguments":`...)
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				b = events.AppendString(b, args)
				b = append(b, `}}`...)
			}
			b = append(b, ']')
		}
	case events.RoleTool:
		b = append(b, `,"tool_call_id":`...)
		b = events.AppendString(b, m.ToolCallID)
		b = append(b, `,"content":`...)
		b = events.AppendString(b, m.Content)
	default:
		b = append(b, `,"content":`...)
		if len(m.Parts) > 0 {
			b = appendParts(b, m.Parts)
		} else {
			b = events.AppendString(b, m.Content)
		}
	}
	if m.Name != "" && m.Role != events.RoleTool {
		b = append(b, `,"name":`...)
		b = events.AppendString(b, m.Name)
	}
	return append(b, '}')
}

func appendParts(b []byte, parts []events.ContentPart) []byte {
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		switch p.Type {
		case "image":
			b = append(b, `{"type":"image_url","image_url":{"url":`...)
			b = events.AppendString(b, p.URL)
			if p.Detail != "" {
				b = append(b, `,"detail":`...)
				b = events.AppendString(b, p.Detail)
			}
			b = append(b, `}}`...)
		default:
			b = append(b, `{"type":"text","text":`...)
			b = events.AppendString(b, p.Text)
			b = append(b, '}')
		}
	}
	return append(b, ']')
}
