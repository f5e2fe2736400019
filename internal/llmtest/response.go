package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Response is one scripted answer. The zero value is an empty assistant
// message that finishes with "stop".
type Response struct {
	Text string
	// Reasoning is streamed as delta.reasoning_content before the text, and
	// sent as message.reasoning_content when not streaming.
	Reasoning string
	// ToolCalls are the calls the model makes; several are parallel calls. A
	// call without an ID gets a unique one.
	ToolCalls []ToolCall
	// ChunkSize is the number of runes per content or reasoning chunk, and of
	// bytes per tool-argument fragment (never splitting a UTF-8 character),
	// when streaming. Default 4.
	ChunkSize int
	// ChunkDelay is slept before each streamed chunk, and once before a
	// non-streamed answer. The sleep ends early when the client goes away.
	ChunkDelay time.Duration
	// StampChunks, when streaming, replaces each content chunk's text with
	// the time it is written, as Unix nanoseconds and a space (the text
	// only sets how many chunks there are): a client on the same machine
	// can measure how long a chunk takes to reach it.
	StampChunks bool
	// Status, when set and not 2xx, answers with that status and an
	// OpenAI-style error body, in both modes.
	Status       int
	ErrorMessage string
	// Headers are set on the answer, whatever its status (e.g. "Retry-After").
	Headers map[string]string
	// BreakAfter cuts the connection abruptly after this many chunks, with no
	// [DONE]; every data frame counts, the role chunk included. A stream with
	// fewer chunks is cut just before [DONE]. Without streaming, any non-zero
	// value cuts the connection before answering. 0 means never.
	BreakAfter int
	// ErrorEvent, when streaming, sends `data: {"error":{...}}` with this
	// message after the content and tool-call chunks, instead of finishing.
	// Without streaming it becomes a 500 with this message.
	ErrorEvent string
	// Hang never answers; the handler returns when the client goes away or the
	// server closes.
	Hang bool
	// Stall, when streaming, holds the stream silent for this long after
	// StallAfter frames (the headers are sent first, so the connection is
	// open and answering, as a stalled provider's is), then goes on. It
	// ends early when the client goes away; a Stall longer than the test
	// is a stream that never resumes. Without streaming, the answer is
	// held this long before anything is sent.
	Stall time.Duration
	// StallAfter is how many frames are sent before the Stall: 0 stalls
	// before the first byte of the body.
	StallAfter int
	// Keepalive, during a Stall, sends an SSE comment (": keepalive")
	// this often, as providers and gateways do while a model thinks.
	Keepalive time.Duration
	// Hold, when set and streaming, holds the stream after HoldAfter
	// frames until it is closed: a test releases the answer once it has
	// seen the state it holds (a client showing part of an answer, a
	// tool still running), rather than hoping a delay is long enough. It
	// ends early when the client goes away or the server closes. A closed
	// Hold holds nothing, so a gate released once stays open.
	Hold <-chan struct{}
	// HoldAfter is how many frames are sent before the Hold: 0 holds
	// before the first frame (the headers are sent).
	HoldAfter int
	// Frames, when streaming, are sent as the stream's data payloads as
	// they are, each as one "data:" frame, in order, then [DONE], in place
	// of the frames generated from the other fields: a test can so send
	// chunks in any order a provider might (tool-call fragments
	// interleaved, ids late, ...). Stall and StallAfter apply.
	Frames []string
	// Usage overrides the token counts. By default they are estimated from the
	// request and the answer (about four characters a token, never zero), so
	// usage can be asserted. A zero TotalTokens is filled in as the sum.
	Usage *Usage
	// FinishReason defaults to "stop", or "tool_calls" when ToolCalls is set.
	FinishReason string
	// Model defaults to the request's model.
	Model string
}

// Usage is the token accounting reported with an answer.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	CachedTokens     int
	ReasoningTokens  int
}

const defaultChunkSize = 4

// answer is a Response with every default resolved for one request, so the
// stream and non-stream writers only format it.
type answer struct {
	Response
	id      string
	created int64
	usage   Usage
}

// resolve applies the defaults. The tool calls are copied before IDs are
// filled in, because one Response value may be shared by concurrent requests.
func (s *Server) resolve(req *Request, resp Response) answer {
	a := answer{Response: resp, id: fmt.Sprintf("chatcmpl-llmtest%06d", s.completionSeq.Add(1)), created: time.Now().Unix()}
	if a.ChunkSize <= 0 {
		a.ChunkSize = defaultChunkSize
	}
	if a.Model == "" {
		a.Model = req.Model
	}
	a.ToolCalls = append([]ToolCall(nil), resp.ToolCalls...)
	for i := range a.ToolCalls {
		if a.ToolCalls[i].ID == "" {
			a.ToolCalls[i].ID = fmt.Sprintf("call_llmtest%06d", s.callSeq.Add(1))
		}
	}
	if a.FinishReason == "" {
		a.FinishReason = "stop"
		if len(a.ToolCalls) > 0 {
			a.FinishReason = "tool_calls"
		}
	}
	if resp.Usage != nil {
		a.usage = *resp.Usage
	} else {
		a.usage = estimateUsage(req, resp)
	}
	if a.usage.TotalTokens == 0 {
		a.usage.TotalTokens = a.usage.PromptTokens + a.usage.CompletionTokens
	}
	return a
}

func (a *answer) isError() bool {
	return a.Status != 0 && (a.Status < 200 || a.Status > 299)
}

// estimateTokens counts about one token per four characters, and at least one
// for any non-empty text.
func estimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

func estimateUsage(req *Request, resp Response) Usage {
	prompt := 0
	for _, m := range req.Messages {
		prompt += 4 + estimateTokens(m.Content)
		for _, tc := range m.ToolCalls {
			prompt += estimateTokens(tc.Name) + estimateTokens(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		prompt += estimateTokens(t.Name) + estimateTokens(t.Description) + estimateTokens(string(t.Parameters))
	}
	reasoning := estimateTokens(resp.Reasoning)
	completion := estimateTokens(resp.Text) + reasoning
	for _, tc := range resp.ToolCalls {
		completion += estimateTokens(tc.Name) + estimateTokens(tc.Arguments)
	}
	return Usage{
		PromptTokens:     max(prompt, 1),
		CompletionTokens: max(completion, 1),
		ReasoningTokens:  reasoning,
	}
}

// usageJSON is the wire form of Usage, with the detail objects clients read
// cached and reasoning tokens from.
type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

func (u Usage) wire() *usageJSON {
	w := &usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	w.PromptTokensDetails.CachedTokens = u.CachedTokens
	w.CompletionTokensDetails.ReasoningTokens = u.ReasoningTokens
	return w
}

// errorBody is OpenAI's error shape; param and code are null unless known.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func newErrorDetail(status int, message, param string) errorDetail {
	d := errorDetail{Message: message, Type: errorTypeFor(status)}
	if param != "" {
		d.Param = &param
	}
	if status == http.StatusTooManyRequests {
		code := "rate_limit_exceeded"
		d.Code = &code
	}
	return d
}

func errorTypeFor(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// writeError answers with status and an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, message, param string) {
	if message == "" {
		message = fmt.Sprintf("llmtest: scripted %d %s", status, http.StatusText(status))
	}
	body, _ := json.Marshal(errorBody{Error: newErrorDetail(status, message, param)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
