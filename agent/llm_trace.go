package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/telemetry"
)

// completeTraced is Complete inside a chat span: the model and endpoint
// asked, retries and failovers as events, the time to the first streamed
// delta, the answer's model, finish reason and usage, and the messages
// when content is captured.
func (c *Client) completeTraced(ctx context.Context, req *Request, stream bool, d Deltas, onRetry func(Retry)) (*Turn, error) {
	ep := c.order()[0]
	host, port := hostPort(ep.URL)
	ctx, span := telemetry.StartChat(ctx, telemetry.ChatInfo{Model: ep.Model, Provider: genAIProvider(host), Address: host,
		Port: port, Stream: stream})
	first := &firstDelta{Deltas: d, start: time.Now()}
	t, err := c.complete(ctx, req, stream, first, func(rt Retry) {
		h, _ := hostPort(rt.URL)
		span.Retry(telemetry.Retry{Address: h, Model: rt.Model, Attempt: rt.Attempt, Status: rt.Status,
			ErrorType: llmErrorType(rt.Err), Delay: rt.Delay, Failover: rt.Failover})
		if onRetry != nil {
			onRetry(rt)
		}
	})
	end := telemetry.ChatEnd{FirstChunk: first.after}
	if err != nil {
		end.ErrorType, end.Message = llmErrorType(err), err.Error()
	} else {
		h, _ := hostPort(t.Provider)
		end.Model, end.Provider, end.FinishReason = t.Model, genAIProvider(h), t.FinishReason
		end.Usage = telemetry.Usage{Input: t.Usage.PromptTokens, Output: t.Usage.CompletionTokens,
			CacheRead: t.Usage.CachedTokens, Reasoning: t.Usage.ReasoningTokens}
	}
	if telemetry.CaptureContent() && span.Recording() {
		end.Input = inputMessages(req.Messages)
		if t != nil {
			end.Output = outputMessages(t)
		}
	}
	span.End(end)
	return t, err
}

// firstDelta notes when the first delta of an answer arrived.
type firstDelta struct {
	Deltas
	start time.Time
	after time.Duration
}

func (f *firstDelta) seen() {
	if f.after == 0 {
		f.after = max(time.Since(f.start), 1)
	}
}

func (f *firstDelta) Text(s string) (string, error)      { f.seen(); return f.Deltas.Text(s) }
func (f *firstDelta) Reasoning(s string) (string, error) { f.seen(); return f.Deltas.Reasoning(s) }
func (f *firstDelta) ToolCallStart(key int, id, name string) error {
	f.seen()
	return f.Deltas.ToolCallStart(key, id, name)
}
func (f *firstDelta) ToolCallArgs(key int, s string) (string, error) {
	f.seen()
	return f.Deltas.ToolCallArgs(key, s)
}

// llmErrorType classifies a failed LLM call for error.type: the HTTP
// status, or the kind of failure.
func llmErrorType(err error) string {
	if s := status(err); s != 0 {
		return strconv.Itoa(s)
	}
	var se *StreamError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &se):
		if se.Code != "" {
			return se.Code
		}
		return "stream_error"
	case errors.Is(err, ErrStreamBroken):
		return "stream_broken"
	case errors.As(err, &ne):
		return "network"
	}
	return "_OTHER"
}

// hostPort splits an endpoint URL (or a host[:port]) into its host and
// port.
func hostPort(raw string) (string, int) {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		if p := u.Port(); p != "" {
			n, _ := strconv.Atoi(p)
			return u.Hostname(), n
		}
		switch u.Scheme {
		case "https":
			return u.Hostname(), 443
		case "http":
			return u.Hostname(), 80
		}
		return u.Hostname(), 0
	}
	host := providerOf(raw)
	if h, p, err := net.SplitHostPort(host); err == nil {
		n, _ := strconv.Atoi(p)
		return h, n
	}
	return host, 0
}

// genAIProvider is gen_ai.provider.name for an endpoint's host: the
// conventions' name for the providers they list, else the host itself.
func genAIProvider(host string) string {
	switch {
	case host == "api.openai.com":
		return "openai"
	case strings.HasSuffix(host, ".openai.azure.com"):
		return "azure.ai.openai"
	case strings.HasSuffix(host, ".services.ai.azure.com"), strings.HasSuffix(host, ".models.ai.azure.com"):
		return "azure.ai.inference"
	case host == "api.anthropic.com":
		return "anthropic"
	case host == "api.deepseek.com":
		return "deepseek"
	case host == "api.groq.com":
		return "groq"
	case host == "api.mistral.ai":
		return "mistral_ai"
	case host == "api.x.ai":
		return "x_ai"
	case host == "api.perplexity.ai":
		return "perplexity"
	case host == "api.cohere.ai", host == "api.cohere.com":
		return "cohere"
	case host == "generativelanguage.googleapis.com":
		return "gcp.gemini"
	case strings.HasSuffix(host, "aiplatform.googleapis.com"):
		return "gcp.vertex_ai"
	case strings.HasPrefix(host, "bedrock-runtime.") && strings.HasSuffix(host, ".amazonaws.com"):
		return "aws.bedrock"
	}
	return host
}

// The content the GenAI conventions record (gen_ai.input.messages,
// gen_ai.output.messages): messages of parts.
type (
	genAIMessage struct {
		Role         string      `json:"role"`
		Parts        []genAIPart `json:"parts"`
		FinishReason string      `json:"finish_reason,omitempty"`
	}
	genAIPart struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Result    string          `json:"result,omitempty"`
		Modality  string          `json:"modality,omitempty"`
		URI       string          `json:"uri,omitempty"`
	}
)

// inputMessages is a request's conversation in the conventions' schema.
func inputMessages(msgs []events.Message) string {
	out := make([]genAIMessage, 0, len(msgs))
	for _, m := range msgs {
		gm := genAIMessage{Role: string(m.Role)}
		if m.Role == events.RoleTool {
			gm.Parts = append(gm.Parts, genAIPart{Type: "tool_call_response", ID: m.ToolCallID, Result: m.Content})
			out = append(out, gm)
			continue
		}
		if m.Reasoning != "" {
			gm.Parts = append(gm.Parts, genAIPart{Type: "reasoning", Content: m.Reasoning})
		}
		switch {
		case len(m.Parts) > 0:
			for _, p := range m.Parts {
				if p.Type == "image" {
					gm.Parts = append(gm.Parts, genAIPart{Type: "uri", Modality: "image", URI: imageURI(p.URL)})
				} else {
					gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: p.Text})
				}
			}
		case m.Content != "":
			gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: m.Content})
		}
		gm.Parts = appendCalls(gm.Parts, m.ToolCalls)
		out = append(out, gm)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// outputMessages is an answer in the conventions' schema.
func outputMessages(t *Turn) string {
	gm := genAIMessage{Role: string(events.RoleAssistant), FinishReason: t.FinishReason, Parts: []genAIPart{}}
	if t.Reasoning != "" {
		gm.Parts = append(gm.Parts, genAIPart{Type: "reasoning", Content: t.Reasoning})
	}
	if t.Content != "" {
		gm.Parts = append(gm.Parts, genAIPart{Type: "text", Content: t.Content})
	}
	gm.Parts = appendCalls(gm.Parts, t.ToolCalls)
	b, _ := json.Marshal([]genAIMessage{gm})
	return string(b)
}

func appendCalls(parts []genAIPart, calls []events.ToolCall) []genAIPart {
	for _, c := range calls {
		args := json.RawMessage(c.Arguments)
		if !json.Valid(args) {
			args, _ = json.Marshal(c.Arguments)
		}
		parts = append(parts, genAIPart{Type: "tool_call", ID: c.ID, Name: c.Name, Arguments: args})
	}
	return parts
}

// imageURI is an image's URL, with the bytes of a data: URL left out.
func imageURI(u string) string {
	if strings.HasPrefix(u, "data:") {
		if i := strings.IndexByte(u, ','); i > 0 {
			return u[:i+1] + "[omitted]"
		}
	}
	return u
}
