package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultChunkDelay is the pause before each streamed chunk of the shared
// client: long enough to see an answer stream, short enough not to wait.
const DefaultChunkDelay = 15 * time.Millisecond

// Transport serves the demo model's chat-completions endpoint in process:
// POST <URL>/chat/completions, streaming (server-sent events, one chunk a
// ChunkDelay) and not. Any other request gets an OpenAI-style error.
type Transport struct {
	// ChunkDelay is the pause before each streamed chunk; 0 sends them at
	// once.
	ChunkDelay time.Duration
}

var client = &http.Client{Transport: &Transport{ChunkDelay: DefaultChunkDelay}}

// HTTPClient is the client that reaches the demo model (a Transport with
// DefaultChunkDelay), shared by every caller.
func HTTPClient() *http.Client { return client }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if !strings.EqualFold(req.URL.Hostname(), Host) {
		return nil, fmt.Errorf("demo model: %s is not %s", req.URL.Host, Host)
	}
	if !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return errorResponse(req, http.StatusNotFound, "the demo model serves only POST /chat/completions, not "+req.URL.Path, "unknown_url"), nil
	}
	if req.Method != http.MethodPost {
		return errorResponse(req, http.StatusMethodNotAllowed, "the demo model's /chat/completions takes POST", "method_not_allowed"), nil
	}
	if req.Body == nil {
		return errorResponse(req, http.StatusBadRequest, "the request has no body", "invalid_request"), nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 32<<20))
	if err != nil {
		return nil, err
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return errorResponse(req, http.StatusBadRequest, "the request body is not a chat-completions request: "+err.Error(), "invalid_request"), nil
	}
	a := Decide(&r)
	u := estimateUsage(len(body), a)
	id := "chatcmpl-demo-" + strconv.FormatUint(uint64(len(body))<<20|uint64(len(a.Text)), 36)
	if !r.Stream {
		return response(req, "application/json", -1, io.NopCloser(bytes.NewReader(completion(id, a, u)))), nil
	}
	pr, pw := io.Pipe()
	s := &stream{ctx: req.Context(), w: pw, delay: t.ChunkDelay, id: id, usage: r.StreamOptions != nil && r.StreamOptions.IncludeUsage}
	// The goroutine belongs to the response: it ends when the answer is
	// written, the request's context ends, or the reader closes the body.
	go func() { pw.CloseWithError(s.write(a, u)) }()
	return response(req, "text/event-stream", -1, pr), nil
}

func response(req *http.Request, contentType string, length int64, body io.ReadCloser) *http.Response {
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {contentType}, "Cache-Control": {"no-cache"}},
		Body:          body,
		ContentLength: length,
		Request:       req,
	}
}

func errorResponse(req *http.Request, status int, message, code string) *http.Response {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "code": code}})
	resp := response(req, "application/json", int64(len(body)), io.NopCloser(bytes.NewReader(body)))
	resp.StatusCode, resp.Status = status, fmt.Sprintf("%d %s", status, http.StatusText(status))
	return resp
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// estimateUsage counts about four bytes a token: the demo has no
// tokenizer, and says so in README.md.
func estimateUsage(requestBytes int, a Answer) usage {
	out := len(a.Text) + len(a.Reasoning)
	for _, c := range a.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u := usage{PromptTokens: (requestBytes + 3) / 4, CompletionTokens: (out + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

type wireCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// completion is the non-streamed answer, a chat.completion object.
func completion(id string, a Answer, u usage) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if a.Text != "" || len(a.ToolCalls) == 0 {
		msg["content"] = a.Text
	}
	if a.Reasoning != "" {
		msg["reasoning_content"] = a.Reasoning
	}
	if len(a.ToolCalls) > 0 {
		calls := make([]wireCall, len(a.ToolCalls))
		for i, c := range a.ToolCalls {
			calls[i].ID, calls[i].Type = c.ID, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = c.Name, c.Arguments
		}
		msg["tool_calls"] = calls
	}
	out, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": 0, "model": Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": a.FinishReason}},
		"usage":   u,
	})
	return out
}

// stream writes one answer as chat.completion.chunk events.
type stream struct {
	ctx   context.Context
	w     io.Writer
	delay time.Duration
	id    string
	usage bool
	frame []byte
}

var errGone = errors.New("demo model: the client went away")

func (s *stream) write(a Answer, u usage) error {
	empty := ""
	role := map[string]any{"role": "assistant", "content": &empty}
	if a.Text == "" && len(a.ToolCalls) > 0 {
		role["content"] = nil
	}
	if err := s.chunk(role, nil); err != nil {
		return err
	}
	for _, p := range pieces(a.Reasoning) {
		if err := s.chunk(map[string]any{"reasoning_content": p}, nil); err != nil {
			return err
		}
	}
	for _, p := range pieces(a.Text) {
		if err := s.chunk(map[string]any{"content": p}, nil); err != nil {
			return err
		}
	}
	for i, c := range a.ToolCalls {
		first := wireCall{Index: &i, ID: c.ID, Type: "function"}
		first.Function.Name = c.Name
		if err := s.chunk(map[string]any{"tool_calls": []wireCall{first}}, nil); err != nil {
			return err
		}
		for _, p := range pieces(c.Arguments) {
			frag := wireCall{Index: &i}
			frag.Function.Arguments = p
			if err := s.chunk(map[string]any{"tool_calls": []wireCall{frag}}, nil); err != nil {
				return err
			}
		}
	}
	if err := s.chunk(map[string]any{}, &a.FinishReason); err != nil {
		return err
	}
	if s.usage {
		if err := s.frameOf(map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": 0, "model": Model, "choices": []any{}, "usage": u}); err != nil {
			return err
		}
	}
	_, err := s.w.Write([]byte("data: [DONE]\n\n"))
	return err
}

func (s *stream) chunk(delta map[string]any, finish *string) error {
	c := map[string]any{"id": s.id, "object": "chat.completion.chunk", "created": 0, "model": Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	if s.usage {
		c["usage"] = nil
	}
	return s.frameOf(c)
}

// frameOf waits the chunk delay, then writes v as one data frame.
func (s *stream) frameOf(v any) error {
	if s.delay > 0 {
		t := time.NewTimer(s.delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return s.ctx.Err()
		case <-t.C:
		}
	} else if s.ctx.Err() != nil {
		return s.ctx.Err()
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.frame = append(append(append(s.frame[:0], "data: "...), data...), "\n\n"...)
	if _, err := s.w.Write(s.frame); err != nil {
		return errGone
	}
	return nil
}

// pieces cuts a text into chunks of about two words (a long word is one
// piece of at most 24 bytes, cut on a character boundary), so that
// streaming shows word by word.
func pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		end, spaces := 0, 0
		for end < len(s) && end < 24 {
			r, size := utf8.DecodeRuneInString(s[end:])
			end += size
			if r == ' ' || r == '\n' {
				spaces++
				if spaces == 2 {
					break
				}
			}
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}
