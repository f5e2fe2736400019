package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
)

// Deltas receives a streamed answer as it arrives. The client calls it from
// the goroutine that reads the stream, in stream order. Text, Reasoning and
// ToolCallArgs return the delta the answer keeps: the one given, a
// rewrite, or "" to drop it. An error stops the answer; the client returns
// it as it is (it is the receiver's, not the LLM's), with no retry.
type Deltas interface {
	Text(delta string) (string, error)
	Reasoning(delta string) (string, error)
	// ToolCallStart is called once per call, when its id and name are
	// known. key is the call's place in the answer in order of its first
	// fragment (see callAssembler), not the provider's index; the call is
	// Turn.ToolCalls[i] where Turn.Key(i) == key.
	ToolCallStart(key int, id, name string) error
	// ToolCallArgs is called for each fragment of a call's arguments, in
	// order, after its ToolCallStart.
	ToolCallArgs(key int, delta string) (string, error)
}

// DiscardDeltas ignores a turn's deltas, for a caller that needs only
// the Turn Complete returns.
var DiscardDeltas Deltas = discardDeltas{}

type discardDeltas struct{}

func (discardDeltas) Text(d string) (string, error)                { return d, nil }
func (discardDeltas) Reasoning(d string) (string, error)           { return d, nil }
func (discardDeltas) ToolCallStart(int, string, string) error      { return nil }
func (discardDeltas) ToolCallArgs(_ int, d string) (string, error) { return d, nil }

// deltaError is an error a Deltas returned: the client passes it on as it
// is, neither retried nor counted against the endpoint.
type deltaError struct{ err error }

func (e *deltaError) Error() string { return e.err.Error() }
func (e *deltaError) Unwrap() error { return e.err }

// received wraps an error of the Deltas.
func received(err error) error {
	if err == nil {
		return nil
	}
	return &deltaError{err}
}

// Turn is one complete model answer.
type Turn struct {
	Content      string
	Reasoning    string
	ToolCalls    []events.ToolCall
	FinishReason string
	Model        string
	Usage        aspects.Usage
	// Provider names who answered: the host of the endpoint's URL.
	Provider string
	// keys are the Deltas keys of ToolCalls (nil: each call's place).
	keys []int
}

// Key is the key under which Deltas received ToolCalls[i].
func (t *Turn) Key(i int) int {
	if t.keys == nil {
		return i
	}
	return t.keys[i]
}

// Stream decoding does not go through openai-go's typed decoder: it costs
// about 10 us and 47 allocations per chunk, more than the whole per-run CPU
// budget. Chunks are read with gjson instead (about 1 us, one allocation);
// a differential test checks the result against openai-go's own decoding.

// ErrStreamBroken reports a stream that ended without finishing: the
// connection dropped, or the body ended before [DONE] and a finish reason.
var ErrStreamBroken = errors.New("stream broken")

// StreamError is an error the server sent inside the stream
// (`data: {"error": {...}}`).
type StreamError struct {
	Message string
	Type    string
	Code    string
}

func (e *StreamError) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("LLM stream error (%s): %s", e.Code, e.Message)
	}
	return "LLM stream error: " + e.Message
}

// accumulator assembles a Turn from chunks and forwards deltas.
type accumulator struct {
	d       Deltas
	content strings.Builder
	reason  strings.Builder
	calls   callAssembler
	turn    Turn
	emitted bool // a delta reached d; a retry would duplicate it
	done    bool
	// onStart, when set, is called once, after the chunk that brought the
	// answer's first delta (the stall watch then allows idleTimeout).
	onStart func()
}

// readers are pooled and small: a reader per stream adds up under many
// concurrent runs, and a chunk is a line of a few hundred bytes (a longer
// line is collected whole).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1024) }}

// readStream reads an SSE chat-completions stream to the end.
func (a *accumulator) readStream(body io.Reader) error {
	r := readers.Get().(*bufio.Reader)
	r.Reset(body)
	defer func() {
		r.Reset(nil)
		readers.Put(r)
	}()
	var data []byte
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer: collect it whole.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if stop, perr := a.event(data); perr != nil || stop {
					return perr
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil {
			if len(data) > 0 && err == io.EOF {
				if stop, perr := a.event(data); perr != nil || stop {
					return perr
				}
			}
			if err == io.EOF {
				if a.turn.FinishReason != "" {
					return a.finish()
				}
				return fmt.Errorf("%w: the stream ended before the answer finished", ErrStreamBroken)
			}
			return fmt.Errorf("%w: %w", ErrStreamBroken, err)
		}
	}
}

// event handles one SSE data payload; stop is true at [DONE].
func (a *accumulator) event(data []byte) (stop bool, err error) {
	if string(data) == "[DONE]" {
		return true, a.finish()
	}
	// Parse the chunk where it lies, without copying it: the strings that
	// outlive this call (deltas, ids, names) are cloned as they are taken.
	s := unsafe.String(unsafe.SliceData(data), len(data))
	if !gjson.Valid(s) {
		return false, fmt.Errorf("%w: malformed chunk %.200q", ErrStreamBroken, s)
	}
	if e := gjson.Get(s, "error"); e.Exists() {
		return false, &StreamError{Message: strings.Clone(e.Get("message").String()), Type: strings.Clone(e.Get("type").String()), Code: strings.Clone(e.Get("code").String())}
	}
	return false, a.chunk(s)
}

// chunk handles one chat.completion.chunk. Each object is walked once with
// ForEach: gjson's GetMany would re-parse the chunk from the start for
// every path.
func (a *accumulator) chunk(s string) error {
	var err error
	gjson.Parse(s).ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			if v.Str != "" && v.Str != a.turn.Model {
				a.turn.Model = strings.Clone(v.Str)
			}
		case "usage":
			if v.IsObject() {
				a.turn.Usage = parseUsage(v)
			}
		case "choices":
			v.ForEach(func(_, choice gjson.Result) bool {
				err = a.choice(choice)
				return false // only the first choice is used
			})
		}
		return err == nil
	})
	if a.emitted && a.onStart != nil {
		a.onStart()
		a.onStart = nil
	}
	return err
}

func (a *accumulator) choice(c gjson.Result) error {
	var delta gjson.Result
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "delta":
			delta = v
		case "finish_reason":
			if v.Str != "" {
				a.turn.FinishReason = strings.Clone(v.Str)
			}
		}
		return true
	})
	if !delta.IsObject() {
		return nil
	}
	var content, reasoning, reasoningAlt string
	var calls gjson.Result
	delta.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content":
			content = v.Str
		case "reasoning_content":
			reasoning = v.Str
		case "reasoning":
			reasoningAlt = v.Str
		case "tool_calls":
			calls = v
		}
		return true
	})
	if reasoning == "" {
		reasoning = reasoningAlt
	}
	if reasoning != "" {
		a.emitted = true
		kept, err := a.d.Reasoning(strings.Clone(reasoning))
		if err != nil {
			return received(err)
		}
		a.reason.WriteString(kept)
	}
	if content != "" {
		a.emitted = true
		kept, err := a.d.Text(strings.Clone(content))
		if err != nil {
			return received(err)
		}
		a.content.WriteString(kept)
	}
	if calls.IsArray() {
		var err error
		calls.ForEach(func(_, tc gjson.Result) bool {
			err = a.toolCall(tc)
			return err == nil
		})
		return err
	}
	return nil
}

func (a *accumulator) toolCall(tc gjson.Result) error {
	var f fragment
	var fn gjson.Result
	tc.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			f.index, f.hasIndex = int(v.Int()), v.Type == gjson.Number
		case "id":
			f.id = v.Str // cloned by add if kept
		case "function":
			fn = v
		}
		return true
	})
	fn.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "name":
			f.name = v.Str // cloned by add if kept
		case "arguments":
			f.args = strings.Clone(v.Str)
		}
		return true
	})
	return a.calls.add(f, a.d, &a.emitted)
}

// finish completes the turn once the stream is done.
func (a *accumulator) finish() error {
	if a.done {
		return nil
	}
	a.done = true
	a.turn.Content = a.content.String()
	a.turn.Reasoning = a.reason.String()
	var err error
	if a.turn.ToolCalls, a.turn.keys, err = a.calls.finish(a.d, &a.emitted); err != nil {
		return err
	}
	if a.turn.FinishReason == "" {
		a.turn.FinishReason = "stop"
		if len(a.turn.ToolCalls) > 0 {
			a.turn.FinishReason = "tool_calls"
		}
	}
	return nil
}

func parseUsage(u gjson.Result) aspects.Usage {
	f := gjson.GetMany(u.Raw, "prompt_tokens", "completion_tokens", "total_tokens",
		"prompt_tokens_details.cached_tokens", "completion_tokens_details.reasoning_tokens")
	return aspects.Usage{PromptTokens: f[0].Int(), CompletionTokens: f[1].Int(), TotalTokens: f[2].Int(),
		CachedTokens: f[3].Int(), ReasoningTokens: f[4].Int()}
}

// decodeCompletion reads a non-streaming chat.completion body.
func decodeCompletion(body []byte) (*Turn, error) {
	s := string(body)
	if !gjson.Valid(s) {
		return nil, fmt.Errorf("the LLM answered with malformed JSON: %.200q", s)
	}
	if e := gjson.Get(s, "error"); e.Exists() {
		return nil, &StreamError{Message: e.Get("message").String(), Type: e.Get("type").String(), Code: e.Get("code").String()}
	}
	msg := gjson.Get(s, "choices.0.message")
	if !msg.Exists() {
		return nil, fmt.Errorf("the LLM answer has no choices[0].message: %.200q", s)
	}
	t := &Turn{
		Content:      msg.Get("content").Str,
		Reasoning:    cmp.Or(msg.Get("reasoning_content").Str, msg.Get("reasoning").Str),
		FinishReason: gjson.Get(s, "choices.0.finish_reason").Str,
		Model:        gjson.Get(s, "model").Str,
		Usage:        parseUsage(gjson.Get(s, "usage")),
	}
	var err error
	msg.Get("tool_calls").ForEach(func(i, tc gjson.Result) bool {
		name := tc.Get("function.name").Str
		if name == "" {
			err = fmt.Errorf("the LLM answer has a tool call without a function name")
			return false
		}
		id := tc.Get("id").Str
		if id == "" {
			id = fmt.Sprintf("call_%d", i.Int())
		}
		t.ToolCalls = append(t.ToolCalls, events.ToolCall{ID: id, Name: name, Arguments: tc.Get("function.arguments").Str})
		return true
	})
	return t, err
}
