// Package runrecord keeps what a run needs beyond its events (package
// eventlog) to be replayed, or forked from one of its LLM turns: how it
// was started, the definitions of the chains it ran, each HTTP attempt of
// each LLM call (the request and the answer as it was streamed), each tool
// call's result and the events the call emitted, what its sessions
// recalled and kept, and the answers its interrupts got.
//
// A record holds conversation content: the system prompts, the user's
// messages, the model's answers and the tools' results, as the LLM saw
// them (secrets scrubbed, as the events are). It is kept, like the run's
// event log, for a bounded time (Options.Retention) and size
// (Options.MaxBytes, which the server's recorder enforces as it records).
//
// Implementations: Bolt (the embedded store, beside the sessions under
// --data) and Redis (a fleet). Records are written whole, once, when a run
// ends, compressed (gzip): a conversation sent again every turn compresses
// well.
package runrecord

import (
	"encoding/json"
	"time"
)

// Format is the version of the record format; a reader refuses others.
const Format = 1

// Record is one run's record.
type Record struct {
	Format int  `json:"format"`
	Meta   Meta `json:"meta"`
	// Request is how the run was started.
	Request Request `json:"request"`
	// Chains are the definitions the run used, exactly as deployed: its
	// own chain and those its agents and flow nodes call, by chain id.
	Chains map[string]json.RawMessage `json:"chains"`
	// Globals are the ${global.x} values the chains were built with,
	// secrets left out (their names are kept, their values are not).
	Globals map[string]string `json:"globals,omitempty"`
	// Messages and Tools are the distinct messages and tools arrays of
	// the LLM requests, each once: a request lists their indexes.
	Messages []json.RawMessage `json:"messages,omitempty"`
	Tools    []json.RawMessage `json:"tools,omitempty"`
	// Agents are the agent runs of the run, in the order they started.
	Agents    []Agent      `json:"agents,omitempty"`
	LLMCalls  []LLMCall    `json:"llmCalls,omitempty"`
	ToolCalls []ToolCall   `json:"toolCalls,omitempty"`
	Memory    []MemoryStep `json:"memory,omitempty"`
	Resumes   []Resume     `json:"resumes,omitempty"`
	// Nodes are the steps of the run's own chain, for the canvas.
	Nodes []NodeStep `json:"nodes,omitempty"`
	// Incomplete says why the record lacks part of the run (it outgrew
	// the size bound, say): such a record cannot be replayed.
	Incomplete string `json:"incomplete,omitempty"`
	// Events are the run's events (AG-UI JSON): in an export, and in a
	// stored record when no event log keeps them (a server that keeps
	// nothing on disk).
	Events []json.RawMessage `json:"events,omitempty"`
}

// Meta describes a recorded run in lists.
type Meta struct {
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId,omitempty"`
	ChainID  string `json:"chainId"`
	UserID   string `json:"userId,omitempty"`
	Source   string `json:"source,omitempty"`
	// Owner is the verified caller who started it ("" for none).
	Owner     string    `json:"owner,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
	// Outcome is success, error, cancelled or interrupt (a run that ended
	// while paused); ErrorCode the code of a failed run.
	Outcome   string `json:"outcome,omitempty"`
	ErrorCode string `json:"errorCode,omitempty"`
	// ForkedFrom is the run and LLM turn this run was forked from, and
	// ParentRunID that run's id.
	ForkedFrom  *ForkRef `json:"forkedFrom,omitempty"`
	ParentRunID string   `json:"parentRunId,omitempty"`
	// Steps are the LLM turns of its agents, LLMCalls their HTTP attempts.
	Steps     int `json:"steps"`
	LLMCalls  int `json:"llmCalls"`
	ToolCalls int `json:"toolCalls"`
	// InputTokens and OutputTokens are its usage, sub-agents included;
	// Cost and Currency what it cost (with a price table).
	InputTokens  int64  `json:"inputTokens"`
	OutputTokens int64  `json:"outputTokens"`
	Cost         string `json:"cost,omitempty"`
	Currency     string `json:"currency,omitempty"`
	// Bytes is the record's size as stored (compressed).
	Bytes int `json:"bytes,omitempty"`
	// Replayable is false when the record is incomplete.
	Replayable bool `json:"replayable"`
}

// ForkRef names where a fork started: a run, one of its agent runs
// (Agent, a key of Record.Agents) and that run's LLM turn.
type ForkRef struct {
	RunID string `json:"runId"`
	Agent string `json:"agent,omitempty"`
	Step  int    `json:"step"`
}

// Request is how a run was started.
type Request struct {
	Input    string            `json:"input"`
	Metadata map[string]string `json:"metadata,omitempty"`
	MsgType  string            `json:"msgType,omitempty"`
	// Interruptible: the caller could answer interrupts.
	Interruptible bool `json:"interruptible,omitempty"`
	// NewThread: the server made the thread id up.
	NewThread bool `json:"newThread,omitempty"`
	// Caller is what an AG-UI or OpenAI client added (its tools, context
	// and state), as JSON; absent for none.
	Caller json.RawMessage `json:"caller,omitempty"`
}

// Agent is one agent run of a recorded run.
type Agent struct {
	// Key names it across replays: see agent.Tap.
	Key string `json:"key"`
	// RunID is its run id in the recorded run (its events carry it).
	RunID   string `json:"runId"`
	ChainID string `json:"chainId"`
	NodeID  string `json:"nodeId"`
	// Parent and ToolCallID: the agent run and the tool call that started
	// it ("" for the chain's own agents).
	Parent     string `json:"parent,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// LLMCall is one HTTP attempt of an LLM call.
type LLMCall struct {
	// Agent is the key of the agent run that made it ("" for none: an
	// ai/intent node); Seq its place among that run's attempts, from 0;
	// Step the agent's LLM turn (0 outside the loop: a session's
	// compaction).
	Agent  string `json:"agent"`
	Seq    int    `json:"seq"`
	Step   int    `json:"step,omitempty"`
	URL    string `json:"url"`
	Stream bool   `json:"stream,omitempty"`
	// AtMs is when it started, after the run's start; DurationMs how long
	// its answer took to read.
	AtMs       int64        `json:"atMs"`
	DurationMs int64        `json:"durationMs"`
	Request    WireRequest  `json:"request"`
	Response   WireResponse `json:"response"`
}

// WireRequest is a request body, its messages and tools array by index
// (in Record.Messages and Record.Tools).
type WireRequest struct {
	// Fields is the body's object without messages and tools.
	Fields   json.RawMessage `json:"fields"`
	Messages []int           `json:"messages"`
	// Tools is -1 when the request offered none.
	Tools int `json:"tools"`
}

// WireResponse is what an attempt got back.
type WireResponse struct {
	// Status is the HTTP status; 0 when there was no response (Error).
	Status int `json:"status,omitempty"`
	// Header are the headers the client reads (Content-Type, Retry-After).
	Header map[string]string `json:"header,omitempty"`
	// Body is the body as it was read (an SSE stream's text); BodyBytes
	// holds it instead when it is not UTF-8.
	Body      string `json:"body,omitempty"`
	BodyBytes []byte `json:"bodyBytes,omitempty"`
	// Error is the request's failure before any response (a refused
	// connection); Network says it was a network error.
	Error   string `json:"error,omitempty"`
	Network bool   `json:"network,omitempty"`
	// Broken is the error that ended reading the body early.
	Broken string `json:"broken,omitempty"`
}

// BodyData returns the response body.
func (w *WireResponse) BodyData() []byte {
	if w.BodyBytes != nil {
		return w.BodyBytes
	}
	return []byte(w.Body)
}

// ToolCall is one tool call an agent run executed.
type ToolCall struct {
	Agent    string          `json:"agent"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Type     string          `json:"type,omitempty"`
	TargetID string          `json:"targetId,omitempty"`
	Args     json.RawMessage `json:"args"`
	// Result is what the tool returned (nil when it failed: Error).
	Result *ToolResult `json:"result,omitempty"`
	// ErrorKind and Error describe a failed call (Error is the error's
	// whole text).
	ErrorKind string `json:"errorKind,omitempty"`
	Error     string `json:"error,omitempty"`
	// Events are what the call emitted into the run (a rulechain tool's
	// node steps), in the server's own encoding; a sub-agent's are not
	// kept, its run is replayed.
	Events     []json.RawMessage `json:"events,omitempty"`
	DurationMs int64             `json:"durationMs"`
}

// ToolResult is a tool's result, secrets scrubbed.
type ToolResult struct {
	Text       string          `json:"text"`
	Parts      json.RawMessage `json:"parts,omitempty"`
	Structured json.RawMessage `json:"structured,omitempty"`
	IsError    bool            `json:"isError,omitempty"`
}

// MemoryStep is what a session's memory did for an agent run: its Recall
// (the conversation the run continued) or its Keep.
type MemoryStep struct {
	Agent string `json:"agent"`
	Phase string `json:"phase"`
	// Messages are what Recall gave (the server's encoding).
	Messages json.RawMessage `json:"messages,omitempty"`
	// Events are what it emitted; LLMCalls how many LLM attempts it made
	// (a compaction's), which a replay skips.
	Events   []json.RawMessage `json:"events,omitempty"`
	LLMCalls int               `json:"llmCalls,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// Resume is the answer to one pause of the run: the entries sent, and the
// ids of the interrupts the pause raised, in their order.
type Resume struct {
	Interrupts []string `json:"interrupts"`
	// ToolCalls are the interrupts' tool calls, in the same order.
	ToolCalls []string        `json:"toolCalls,omitempty"`
	Entries   json.RawMessage `json:"entries"`
	// Expired are the interrupts nobody answered in time (a denial each),
	// answered by the run's expiry rather than by Entries.
	Expired []string `json:"expired,omitempty"`
	// RunID is the run id the answering request gave the run's next
	// segment, when it gave one of its own (AG-UI's resume may).
	RunID string `json:"runId,omitempty"`
}

// NodeStep is one node step of the run's own chain.
type NodeStep struct {
	ChainID    string `json:"chainId"`
	NodeID     string `json:"nodeId"`
	Relation   string `json:"relation,omitempty"`
	Error      string `json:"error,omitempty"`
	AtMs       int64  `json:"atMs"`
	DurationMs int64  `json:"durationMs"`
}
