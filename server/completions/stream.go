package completions

import (
	"encoding/json"
	"strconv"

	"github.com/ruleagent/ruleagent/events"
)

// Usage is the OpenAI usage object.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	// Details are sent only when there is something to say.
	PromptDetails     *PromptDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionDetails *CompletionDetails `json:"completion_tokens_details,omitempty"`
	// Cost and Currency are ruleagent's: what the run cost, a decimal
	// string in Currency, when a price table applies (else left out).
	// OpenAI's clients pass fields they do not know through.
	Cost     string `json:"cost,omitempty"`
	Currency string `json:"currency,omitempty"`
}

// PromptDetails breaks down the prompt tokens.
type PromptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// CompletionDetails breaks down the completion tokens.
type CompletionDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// UsageOf sums AG-UI usage entries into OpenAI's usage object.
func UsageOf(us []events.TokenUsage) Usage {
	var u Usage
	var cached, reasoning int64
	for _, e := range us {
		u.PromptTokens += e.InputTokens
		u.CompletionTokens += e.OutputTokens
		cached += e.CachedInputTokens
		reasoning += e.ReasoningTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if cached > 0 {
		u.PromptDetails = &PromptDetails{CachedTokens: cached}
	}
	if reasoning > 0 {
		u.CompletionDetails = &CompletionDetails{ReasoningTokens: reasoning}
	}
	return u
}

// Chunks encodes deltas as `chat.completion.chunk` objects and hands each
// to Write (one SSE data frame each). It implements Deltas.
type Chunks struct {
	ID      string
	Created int64
	Model   string
	// IncludeUsage is stream_options.include_usage: every chunk carries
	// "usage": null and a last chunk carries the usage.
	IncludeUsage bool
	Write        func([]byte) error

	head    []byte // the fixed start of every chunk, up to `"choices":[`
	buf     []byte // the chunk being written
	d       []byte // the delta being built
	started bool
}

func (c *Chunks) prefix() []byte {
	if c.head == nil {
		b := append([]byte(nil), `{"id":`...)
		b = events.AppendString(b, c.ID)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = strconv.AppendInt(b, c.Created, 10)
		b = append(b, `,"model":`...)
		b = events.AppendString(b, c.Model)
		c.head = append(b, `,"choices":[`...)
	}
	return c.head
}

// chunk writes one chunk whose choice delta is delta (a JSON object).
func (c *Chunks) chunk(delta []byte, finish string) {
	b := append(c.buf[:0], c.prefix()...)
	b = append(b, `{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = events.AppendString(b, finish)
	}
	b = append(b, "}]"...)
	if c.IncludeUsage {
		b = append(b, `,"usage":null`...)
	}
	b = append(b, '}')
	c.buf = b
	_ = c.Write(b)
}

// Start sends the first chunk, which names the assistant role.
func (c *Chunks) Start() {
	if !c.started {
		c.started = true
		c.chunk([]byte(`{"role":"assistant","content":""}`), "")
	}
}

// Content implements Deltas.
func (c *Chunks) Content(s string) {
	c.Start()
	d := append(c.d[:0], `{"content":`...)
	d = append(events.AppendString(d, s), '}')
	c.d = d
	c.chunk(d, "")
}

// Reasoning implements Deltas.
func (c *Chunks) Reasoning(s string) {
	c.Start()
	d := append(c.d[:0], `{"reasoning_content":`...)
	d = append(events.AppendString(d, s), '}')
	c.d = d
	c.chunk(d, "")
}

// ToolCall implements Deltas.
func (c *Chunks) ToolCall(index int, id, name string) {
	c.Start()
	d := append(c.d[:0], `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"id":`...)
	d = events.AppendString(d, id)
	d = append(d, `,"type":"function","function":{"name":`...)
	d = events.AppendString(d, name)
	d = append(d, `,"arguments":""}}]}`...)
	c.d = d
	c.chunk(d, "")
}

// Arguments implements Deltas.
func (c *Chunks) Arguments(index int, s string) {
	d := append(c.d[:0], `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"function":{"arguments":`...)
	d = events.AppendString(d, s)
	d = append(d, `}}]}`...)
	c.d = d
	c.chunk(d, "")
}

// Finish sends the last choice chunk with finish reason, then the usage
// chunk when asked for, then [DONE].
func (c *Chunks) Finish(finish string, usage Usage) {
	c.Start()
	c.chunk([]byte(`{}`), finish)
	if c.IncludeUsage {
		u, _ := json.Marshal(usage)
		b := append(c.buf[:0], c.prefix()...)
		b = append(b, `],"usage":`...)
		b = append(b, u...)
		b = append(b, '}')
		c.buf = b
		_ = c.Write(b)
	}
	_ = c.Write([]byte("[DONE]"))
}

// Fail sends an error the way OpenAI does inside a stream: a data line
// holding {"error": {...}} (the SDKs raise it), then [DONE].
func (c *Chunks) Fail(message, typ, code string) {
	_ = c.Write(ErrorJSON(message, typ, code))
	_ = c.Write([]byte("[DONE]"))
}

// ErrorJSON is OpenAI's error object.
func ErrorJSON(message, typ, code string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": nullable(code), "param": nil}})
	return b
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
