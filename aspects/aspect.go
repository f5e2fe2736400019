// Package aspects defines the interception points of a run: run start,
// before, around, after and completed; before and after each LLM call; each
// streamed chunk; before and after each tool call. Every point is really
// invoked by the engine or the tool wrapper, and its result is honoured: a
// rewrite takes effect and an error stops what it intercepts.
//
// An aspect is any value with an Order and a PointCut that implements one or
// more of the point interfaces below. Lower Order runs first (and, for
// Around, outermost). PointCut decides, per call, whether the aspect applies.
package aspects

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// Aspect is the base every aspect implements.
type Aspect interface {
	// Order sorts aspects: lower runs first, and wraps outermost.
	Order() int
	// PointCut reports whether the aspect applies at p.
	PointCut(ctx context.Context, p *Point) bool
}

// Point identifies where an interception happens. The same identity is given
// at every point of a run, tool points included.
type Point struct {
	ChainID  string
	NodeID   string
	NodeName string
	RunID    string
	ThreadID string
	UserID   string
	Model    string
	// Metadata is a read-only snapshot of the incoming message's metadata.
	Metadata map[string]string
	// Step is the current LLM turn (1-based), 0 before the first.
	Step int
	// Tool is the tool being called (tool points only).
	Tool string
}

// RunInput is what a run starts from. Before aspects may rewrite it.
type RunInput struct {
	Messages     []events.Message
	SystemPrompt string
}

// RunOutput is what a run produced. After aspects may rewrite it.
type RunOutput struct {
	Content   string
	Reasoning string
	// Messages are the messages the run added (assistant and tool messages).
	Messages  []events.Message
	Usage     Usage
	Steps     int
	ToolCalls int
	// Truncated is true when maxStep forced the answer.
	Truncated bool
	Model     string
	Duration  time.Duration
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	TotalTokens      int64
	CachedTokens     int64
	ReasoningTokens  int64
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.CachedTokens += o.CachedTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// RunFunc runs (the rest of) a run.
type RunFunc func(ctx context.Context, in *RunInput) (*RunOutput, error)

// RunStart runs first; an error aborts the run.
type RunStart interface {
	Aspect
	OnRunStart(ctx context.Context, p *Point, in *RunInput) error
}

// Before may rewrite the input; an error aborts the run.
type Before interface {
	Aspect
	Before(ctx context.Context, p *Point, in *RunInput) error
}

// Around wraps the run. It may short-circuit by not calling next.
type Around interface {
	Aspect
	Around(ctx context.Context, p *Point, in *RunInput, next RunFunc) (*RunOutput, error)
}

// After may rewrite a successful output; an error fails the run.
type After interface {
	Aspect
	After(ctx context.Context, p *Point, out *RunOutput) error
}

// Completed always runs last, with the output or the error.
type Completed interface {
	Aspect
	OnCompleted(ctx context.Context, p *Point, out *RunOutput, err error)
}

// LLMRequest is one request to the model. BeforeLLM aspects may rewrite the
// messages.
type LLMRequest struct {
	Messages []events.Message
	// ToolNames are the tools offered in this turn (none on a forced final turn).
	ToolNames []string
}

// LLMResponse is one model answer. AfterLLM aspects may rewrite it.
type LLMResponse struct {
	Content      string
	Reasoning    string
	ToolCalls    []events.ToolCall
	FinishReason string
	Model        string
	Usage        Usage
}

// BeforeLLM runs before each LLM call; an error fails the run.
type BeforeLLM interface {
	Aspect
	BeforeLLM(ctx context.Context, p *Point, req *LLMRequest) error
}

// AfterLLM runs after each LLM call; an error fails the run.
type AfterLLM interface {
	Aspect
	AfterLLM(ctx context.Context, p *Point, resp *LLMResponse) error
}

// ChunkKind says what a streamed chunk carries.
type ChunkKind uint8

// Chunk kinds.
const (
	ChunkText ChunkKind = iota + 1
	ChunkReasoning
	ChunkToolArgs
)

// Chunk is one streamed delta.
type Chunk struct {
	Kind       ChunkKind
	Delta      string
	MessageID  string
	ToolCallID string
}

// StreamChunk sees each chunk as it arrives; an error stops the stream and
// fails the run.
type StreamChunk interface {
	Aspect
	OnChunk(ctx context.Context, p *Point, c *Chunk) error
}

// ToolCall is a call about to run. ToolCallBefore aspects may rewrite Args.
type ToolCall struct {
	ID       string
	Name     string
	Args     json.RawMessage
	ToolType string
	TargetID string
}

// ToolResult is a call's outcome. ToolCallAfter aspects may rewrite Content.
type ToolResult struct {
	Content  string
	IsError  bool
	ErrKind  string
	Duration time.Duration
}

// ToolCallBefore may rewrite the arguments or refuse the call by returning
// an error (the model reads the refusal as the tool's result).
type ToolCallBefore interface {
	Aspect
	BeforeToolCall(ctx context.Context, p *Point, call *ToolCall) error
}

// ToolCallAfter may rewrite the result. An error turns the result into an
// error result carrying the aspect's message.
type ToolCallAfter interface {
	Aspect
	AfterToolCall(ctx context.Context, p *Point, call *ToolCall, res *ToolResult) error
}

// Everywhere is a PointCut helper: embed it to apply an aspect at every point.
type Everywhere struct{}

// PointCut implements Aspect.
func (Everywhere) PointCut(context.Context, *Point) bool { return true }
