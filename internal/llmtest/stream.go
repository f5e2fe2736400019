package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// chunk is one "chat.completion.chunk" object of a streamed answer.
type chunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Usage is left out unless the client asked for include_usage; then it is
	// null on every chunk but the last, as the real API does.
	Usage any `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        any       `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// The deltas are separate types because which keys are present (and which
// are null) is part of the wire format clients depend on.
type roleDelta struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
}

type contentDelta struct {
	Content string `json:"content"`
}

type reasoningDelta struct {
	ReasoningContent string `json:"reasoning_content"`
}

type toolCallsDelta struct {
	ToolCalls []toolCallDelta `json:"tool_calls"`
}

// toolCallDelta is one fragment of a tool call. Only the first fragment of a
// call carries id, type and name; clients concatenate names too, so repeating
// the name would corrupt it.
type toolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function toolFunctionDelta `json:"function"`
}

type toolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

var (
	// errClientGone ends a stream whose client disconnected; nothing is left
	// to tell it.
	errClientGone = errors.New("llmtest: client went away")
	// errCut ends a stream by dropping the connection without [DONE].
	errCut = errors.New("llmtest: stream cut")

	jsonNull = json.RawMessage("null")
)

// streamWriter writes one answer as server-sent events, flushing every frame
// so the client sees each chunk when it is sent.
type streamWriter struct {
	server       *Server
	ctx          context.Context
	w            http.ResponseWriter
	rc           *http.ResponseController
	a            *answer
	includeUsage bool
	sent         int
	frame        []byte
}

func (s *Server) writeStream(w http.ResponseWriter, r *http.Request, a *answer, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(statusOr200(a.Status))
	sw := &streamWriter{server: s, ctx: r.Context(), w: w, rc: http.NewResponseController(w), a: a, includeUsage: includeUsage}
	// Send the headers now: clients return from their call on the headers,
	// and a test measuring ChunkDelay must not also wait for them.
	if sw.rc.Flush() != nil {
		return
	}
	if err := sw.run(); errors.Is(err, errCut) {
		// ErrAbortHandler closes the connection mid-body without logging, so
		// the client reads an unexpected EOF, as with a real network failure.
		panic(http.ErrAbortHandler)
	}
}

func (sw *streamWriter) run() error {
	a := sw.a
	if len(a.Frames) > 0 {
		for _, f := range a.Frames {
			if err := sw.writeFrame(json.RawMessage(f)); err != nil {
				return err
			}
		}
		return sw.writeRaw([]byte("data: [DONE]\n\n"))
	}
	role := roleDelta{Role: "assistant"}
	if a.Text != "" || len(a.ToolCalls) == 0 {
		empty := ""
		role.Content = &empty
	}
	if err := sw.send(role, nil); err != nil {
		return err
	}
	for _, piece := range splitRunes(a.Reasoning, a.ChunkSize) {
		if err := sw.send(reasoningDelta{ReasoningContent: piece}, nil); err != nil {
			return err
		}
	}
	for _, piece := range splitRunes(a.Text, a.ChunkSize) {
		if err := sw.send(contentDelta{Content: piece}, nil); err != nil {
			return err
		}
	}
	for i, tc := range a.ToolCalls {
		if err := sw.sendToolCall(i, tc); err != nil {
			return err
		}
	}
	if a.ErrorEvent != "" {
		return sw.sendError()
	}
	finish := a.FinishReason
	if err := sw.send(struct{}{}, &finish); err != nil {
		return err
	}
	if sw.includeUsage {
		if err := sw.writeFrame(chunk{ID: a.id, Object: "chat.completion.chunk", Created: a.created, Model: a.Model, Choices: []chunkChoice{}, Usage: a.usage.wire()}); err != nil {
			return err
		}
	}
	if a.BreakAfter > 0 {
		return errCut
	}
	return sw.writeRaw([]byte("data: [DONE]\n\n"))
}

// sendToolCall streams one call: a first fragment naming it with empty
// arguments, then the arguments in pieces under the same index.
func (sw *streamWriter) sendToolCall(index int, tc ToolCall) error {
	first := toolCallDelta{Index: index, ID: tc.ID, Type: "function", Function: toolFunctionDelta{Name: tc.Name}}
	if err := sw.send(toolCallsDelta{ToolCalls: []toolCallDelta{first}}, nil); err != nil {
		return err
	}
	for _, piece := range splitBytes(tc.Arguments, sw.a.ChunkSize) {
		fragment := toolCallDelta{Index: index, Function: toolFunctionDelta{Arguments: piece}}
		if err := sw.send(toolCallsDelta{ToolCalls: []toolCallDelta{fragment}}, nil); err != nil {
			return err
		}
	}
	return nil
}

// sendError ends the stream with an error event in place of the finish chunk,
// as providers do when generation fails after the stream has started.
func (sw *streamWriter) sendError() error {
	if err := sw.writeFrame(errorBody{Error: newErrorDetail(http.StatusInternalServerError, sw.a.ErrorEvent, "")}); err != nil {
		return err
	}
	if sw.a.BreakAfter > 0 {
		return errCut
	}
	return nil
}

func (sw *streamWriter) send(delta any, finishReason *string) error {
	c := chunk{
		ID:      sw.a.id,
		Object:  "chat.completion.chunk",
		Created: sw.a.created,
		Model:   sw.a.Model,
		Choices: []chunkChoice{{Delta: delta, FinishReason: finishReason}},
	}
	if sw.includeUsage {
		c.Usage = jsonNull
	}
	return sw.writeFrame(c)
}

// writeFrame writes one `data:` frame after the chunk delay, or cuts the
// stream once BreakAfter frames have gone out.
func (sw *streamWriter) writeFrame(v any) error {
	if sw.a.BreakAfter > 0 && sw.sent >= sw.a.BreakAfter {
		return errCut
	}
	if sw.a.Stall > 0 && sw.sent == sw.a.StallAfter {
		if err := sw.stall(); err != nil {
			return err
		}
	}
	if sw.a.Hold != nil && sw.sent == sw.a.HoldAfter {
		if err := sw.hold(); err != nil {
			return err
		}
	}
	if !sw.server.sleep(sw.ctx, sw.a.ChunkDelay) {
		if sw.ctx.Err() != nil {
			return errClientGone
		}
		return errCut
	}
	if sw.a.StampChunks {
		v = stamped(v)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sw.frame = append(sw.frame[:0], "data: "...)
	sw.frame = append(sw.frame, data...)
	sw.frame = append(sw.frame, "\n\n"...)
	sw.sent++
	return sw.writeRaw(sw.frame)
}

// hold waits for the answer's Hold to be closed, with the headers and the
// frames so far flushed to the client.
func (sw *streamWriter) hold() error {
	select {
	case <-sw.a.Hold:
		return nil
	default:
	}
	if err := sw.rc.Flush(); err != nil {
		return errClientGone
	}
	select {
	case <-sw.a.Hold:
		return nil
	case <-sw.ctx.Done():
		return errClientGone
	case <-sw.server.closing:
		return errCut
	}
}

// stall holds the stream silent for the answer's Stall, but for its
// keepalive comments.
func (sw *streamWriter) stall() error {
	end := time.Now().Add(sw.a.Stall)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		wait := left
		if sw.a.Keepalive > 0 {
			wait = min(wait, sw.a.Keepalive)
		}
		if !sw.server.sleep(sw.ctx, wait) {
			if sw.ctx.Err() != nil {
				return errClientGone
			}
			return errCut
		}
		if sw.a.Keepalive > 0 && time.Until(end) > 0 {
			if err := sw.writeRaw([]byte(": keepalive\n\n")); err != nil {
				return err
			}
		}
	}
}

// stamped puts the time into a content chunk (Response.StampChunks).
func stamped(v any) any {
	c, ok := v.(chunk)
	if !ok || len(c.Choices) != 1 {
		return v
	}
	if _, ok := c.Choices[0].Delta.(contentDelta); !ok {
		return v
	}
	choices := []chunkChoice{c.Choices[0]}
	choices[0].Delta = contentDelta{Content: strconv.FormatInt(time.Now().UnixNano(), 10) + " "}
	c.Choices = choices
	return c
}

func (sw *streamWriter) writeRaw(frame []byte) error {
	if _, err := sw.w.Write(frame); err != nil {
		return errClientGone
	}
	if err := sw.rc.Flush(); err != nil {
		return errClientGone
	}
	return nil
}

// splitRunes cuts s into pieces of n runes; "" gives no pieces.
func splitRunes(s string, n int) []string {
	var pieces []string
	for len(s) > 0 {
		end, count := 0, 0
		for end < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			count++
		}
		pieces = append(pieces, s[:end])
		s = s[end:]
	}
	return pieces
}

// splitBytes cuts s into pieces of about n bytes, moving each cut back to a
// character boundary: a JSON string cannot carry half a UTF-8 character.
func splitBytes(s string, n int) []string {
	var pieces []string
	for len(s) > 0 {
		end := min(n, len(s))
		for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
			end--
		}
		if end == 0 {
			_, end = utf8.DecodeRuneInString(s)
		}
		pieces = append(pieces, s[:end])
		s = s[end:]
	}
	return pieces
}
