package ledger

import (
	"encoding/json"
	"time"
)

// Record kinds.
const (
	KindLLM  = "llm"
	KindTool = "tool"
)

// Record is one entry of the ledger: an LLM call with its usage and cost,
// or a tool call with its duration, with the run it belongs to.
type Record struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// RunID is the run as its client knows it (the runId of the
	// RUN_FINISHED that reports the call; a run resumed under another id
	// reports its calls after the pause under that id). ChainID is the
	// chain it ran, ThreadID and UserID its thread and user.
	RunID    string `json:"runId"`
	ChainID  string `json:"chainId"`
	ThreadID string `json:"threadId,omitempty"`
	UserID   string `json:"userId,omitempty"`
	Source   string `json:"source,omitempty"`
	// AgentRunID, AgentChainID and NodeID name the agent that made the
	// call when it is not the run's own: a sub-agent, an agent inside a
	// chain tool. Its calls count in the run's totals, once.
	AgentRunID   string `json:"agentRunId,omitempty"`
	AgentChainID string `json:"agentChainId,omitempty"`
	NodeID       string `json:"nodeId,omitempty"`
	// Step is the LLM turn of that agent's run (0 for calls outside an
	// agent's loop: ai/intent, session compaction).
	Step int `json:"step,omitempty"`

	// An LLM call: who answered, its tokens (cached input and reasoning
	// are parts of input and output), and its cost when a price matched
	// (Price names the entry).
	Provider          string `json:"provider,omitempty"`
	Model             string `json:"model,omitempty"`
	InputTokens       int64  `json:"inputTokens,omitempty"`
	OutputTokens      int64  `json:"outputTokens,omitempty"`
	CachedInputTokens int64  `json:"cachedInputTokens,omitempty"`
	ReasoningTokens   int64  `json:"reasoningTokens,omitempty"`
	Cost              Nanos  `json:"costNanos,omitempty"`
	Price             string `json:"price,omitempty"`

	// A tool call.
	Tool      string `json:"tool,omitempty"`
	ToolType  string `json:"toolType,omitempty"`
	IsError   bool   `json:"isError,omitempty"`
	ErrorKind string `json:"errorKind,omitempty"`

	DurationMs int64 `json:"durationMs"`
}

// Day is the record's UTC day, YYYY-MM-DD: totals and budgets are kept
// per UTC day.
func (r *Record) Day() string { return dayOf(r.Time) }

func dayOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Totals add up records.
type Totals struct {
	// Calls counts LLM calls, Unpriced those whose model had no price.
	Calls    int64 `json:"calls"`
	Unpriced int64 `json:"unpricedCalls,omitempty"`
	// The tokens; TotalTokens is input plus output, as in RUN_FINISHED.
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	CachedInputTokens int64 `json:"cachedInputTokens"`
	ReasoningTokens   int64 `json:"reasoningTokens"`
	TotalTokens       int64 `json:"totalTokens"`
	Cost              Nanos `json:"costNanos"`
	// LLMMs is the LLM calls' wall time; ToolCalls, ToolErrors and ToolMs
	// the tool calls'.
	LLMMs      int64 `json:"llmMs"`
	ToolCalls  int64 `json:"toolCalls"`
	ToolErrors int64 `json:"toolErrors,omitempty"`
	ToolMs     int64 `json:"toolMs"`
}

// Add adds a record.
func (t *Totals) Add(r *Record) {
	switch r.Kind {
	case KindLLM:
		t.Calls++
		if r.Price == "" {
			t.Unpriced++
		}
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CachedInputTokens += r.CachedInputTokens
		t.ReasoningTokens += r.ReasoningTokens
		t.TotalTokens += r.InputTokens + r.OutputTokens
		t.Cost += r.Cost
		t.LLMMs += r.DurationMs
	case KindTool:
		t.ToolCalls++
		if r.IsError {
			t.ToolErrors++
		}
		t.ToolMs += r.DurationMs
	}
}

// Merge adds o.
func (t *Totals) Merge(o Totals) {
	t.Calls += o.Calls
	t.Unpriced += o.Unpriced
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CachedInputTokens += o.CachedInputTokens
	t.ReasoningTokens += o.ReasoningTokens
	t.TotalTokens += o.TotalTokens
	t.Cost += o.Cost
	t.LLMMs += o.LLMMs
	t.ToolCalls += o.ToolCalls
	t.ToolErrors += o.ToolErrors
	t.ToolMs += o.ToolMs
}

// sub takes o away (the pending part of a budget's count, once written).
func (t *Totals) sub(o Totals) {
	neg := o
	neg.Calls, neg.Unpriced, neg.InputTokens, neg.OutputTokens = -o.Calls, -o.Unpriced, -o.InputTokens, -o.OutputTokens
	neg.CachedInputTokens, neg.ReasoningTokens, neg.TotalTokens, neg.Cost = -o.CachedInputTokens, -o.ReasoningTokens, -o.TotalTokens, -o.Cost
	neg.LLMMs, neg.ToolCalls, neg.ToolErrors, neg.ToolMs = -o.LLMMs, -o.ToolCalls, -o.ToolErrors, -o.ToolMs
	t.Merge(neg)
}

// MarshalJSON adds cost, the exact decimal amount, beside costNanos.
func (t Totals) MarshalJSON() ([]byte, error) {
	type plain Totals
	return json.Marshal(struct {
		plain
		CostText string `json:"cost"`
	}{plain(t), t.Cost.String()})
}

// UnmarshalJSON reads what MarshalJSON writes (cost is derived).
func (t *Totals) UnmarshalJSON(b []byte) error {
	type plain Totals
	return json.Unmarshal(b, (*plain)(t))
}

// A dimension of the daily totals budgets are checked against.
const (
	DimUser  = "user"
	DimChain = "chain"
)

// DayKey names one day's totals of one user or chain.
type DayKey struct {
	Day string // YYYY-MM-DD (UTC)
	Dim string // DimUser or DimChain
	ID  string
}

// dayKeys are the daily totals a record counts in.
func (r *Record) dayKeys() []DayKey {
	day := r.Day()
	keys := make([]DayKey, 0, 2)
	if r.UserID != "" {
		keys = append(keys, DayKey{Day: day, Dim: DimUser, ID: r.UserID})
	}
	if r.ChainID != "" {
		keys = append(keys, DayKey{Day: day, Dim: DimChain, ID: r.ChainID})
	}
	return keys
}
