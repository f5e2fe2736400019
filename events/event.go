// Package events defines the typed AG-UI 1.0 events a run produces and the
// per-run ordered stream (Sink) they travel through. It is the lowest layer:
// it imports nothing of ruleagent, and every encoder (SSE, OpenAI chunks,
// terminal, RuleGo Stream messages) is an adapter over this one stream.
package events

import (
	"encoding/json"
	"time"
)

// Type is an AG-UI event type.
type Type string

// The AG-UI 1.0 event types ruleagent emits.
const (
	RunStarted  Type = "RUN_STARTED"
	RunFinished Type = "RUN_FINISHED"
	RunError    Type = "RUN_ERROR"

	StepStarted  Type = "STEP_STARTED"
	StepFinished Type = "STEP_FINISHED"

	TextMessageStart   Type = "TEXT_MESSAGE_START"
	TextMessageContent Type = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd     Type = "TEXT_MESSAGE_END"

	ReasoningStart          Type = "REASONING_START"
	ReasoningMessageStart   Type = "REASONING_MESSAGE_START"
	ReasoningMessageContent Type = "REASONING_MESSAGE_CONTENT"
	ReasoningMessageEnd     Type = "REASONING_MESSAGE_END"
	ReasoningEnd            Type = "REASONING_END"

	ToolCallStart  Type = "TOOL_CALL_START"
	ToolCallArgs   Type = "TOOL_CALL_ARGS"
	ToolCallEnd    Type = "TOOL_CALL_END"
	ToolCallResult Type = "TOOL_CALL_RESULT"

	// ACTIVITY_* carry structured progress shown beside the transcript,
	// such as a remote MCP tool's progress.
	ActivitySnapshot Type = "ACTIVITY_SNAPSHOT"
	ActivityDelta    Type = "ACTIVITY_DELTA"

	SubagentStarted  Type = "SUBAGENT_STARTED"
	SubagentFinished Type = "SUBAGENT_FINISHED"
	SubagentError    Type = "SUBAGENT_ERROR"

	Custom Type = "CUSTOM"
)

// RUN_FINISHED outcomes.
const (
	OutcomeSuccess   = "success"
	OutcomeCancelled = "cancelled"
	OutcomeInterrupt = "interrupt"
	// OutcomeSuspended ends a sub-agent (SUBAGENT_FINISHED) whose run
	// paused with the parent's: it goes on in the resumed run.
	OutcomeSuspended = "suspended"
)

// Interrupt is something a paused run needs from outside before it goes
// on: a person's approval of a tool call, or a form's answer.
type Interrupt struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	// Message is a prompt for whoever answers.
	Message    string `json:"message,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
	// ResponseSchema is the JSON Schema of the expected answer (payload).
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	// ExpiresAt is when the interrupt stops being answerable (RFC 3339).
	ExpiresAt string          `json:"expiresAt,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// SubagentRunID attributes the interrupt to a sub-agent's run.
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

// ProtocolVersion is the AG-UI protocol version ruleagent speaks.
const ProtocolVersion = "1.0"

// Terminal reports whether t ends a run.
func (t Type) Terminal() bool { return t == RunFinished || t == RunError }

// Event is one AG-UI event. It is a flat value type so that emitting one
// does not allocate; each Type uses the fields its AG-UI schema defines and
// the encoder writes only those (optional ones only when set, never null).
// Data that AG-UI has no field for travels in Meta, encoded as the standard
// `metadata` object every event may carry.
type Event struct {
	Type Type
	// Timestamp is Unix milliseconds; the Stream stamps it when zero.
	Timestamp int64

	// RUN_* events.
	ThreadID    string
	RunID       string
	ParentRunID string

	// Text, reasoning and tool-result messages.
	MessageID string
	Role      string
	Delta     string

	// Tool calls.
	ToolCallID      string
	ToolCallName    string
	ParentMessageID string
	Content         string // TOOL_CALL_RESULT

	// STEP_* events.
	StepName string

	// CUSTOM name and value; SUBAGENT_STARTED name.
	Name  string
	Value json.RawMessage

	// RUN_ERROR and SUBAGENT_ERROR.
	Message string
	Code    string

	// RUN_FINISHED and SUBAGENT_FINISHED result (any JSON value).
	Result json.RawMessage
	// Outcome of RUN_FINISHED: "" (success, omitted unless there are
	// pending tool calls), OutcomeSuccess or OutcomeCancelled.
	Outcome string
	// PendingToolCallIDs are the front-end tool calls a successful run left
	// for the client to answer (RUN_FINISHED outcome success).
	PendingToolCallIDs []string
	// Interrupts are what a paused run waits for (RUN_FINISHED outcome
	// interrupt); for SUBAGENT_FINISHED outcome suspended, those of the
	// sub-agent and its own sub-agents (their ids are sent).
	Interrupts []Interrupt
	// ProtocolVersion is the AG-UI version the producer speaks (RUN_STARTED).
	ProtocolVersion string
	// Usage of RUN_FINISHED and RUN_ERROR.
	Usage []TokenUsage

	// ACTIVITY_SNAPSHOT and ACTIVITY_DELTA: the activity is MessageID, of
	// kind ActivityType; a snapshot carries its content (a JSON object) in
	// Activity, a delta a JSON Patch (RFC 6902) of it in Patch.
	ActivityType string
	Activity     json.RawMessage
	Patch        json.RawMessage

	// Sub-agent attribution and lifecycle.
	SubagentRunID       string
	ParentSubagentRunID string
	ParentToolCallID    string
	Description         string

	Meta Meta

	// LogID is the event's id in its run's event log (1, 2, 3 ... per run;
	// 0 when the run keeps none): SSE streams send it as the frame's `id:`,
	// so that a client that reconnects says where it stopped
	// (Last-Event-ID). It is not part of the event's JSON.
	LogID uint64
}

// TokenUsage is one AG-UI usage entry.
type TokenUsage struct {
	Provider          string `json:"provider,omitempty"`
	Model             string `json:"model,omitempty"`
	InputTokens       int64  `json:"inputTokens,omitempty"`
	OutputTokens      int64  `json:"outputTokens,omitempty"`
	TotalTokens       int64  `json:"totalTokens,omitempty"`
	ReasoningTokens   int64  `json:"reasoningTokens,omitempty"`
	CachedInputTokens int64  `json:"cachedInputTokens,omitempty"`
}

// Meta is ruleagent's data about an event that AG-UI has no field for. It is
// encoded as the event's `metadata` object, only the fields that are set.
type Meta struct {
	// ToolType is builtin, rulechain, agent or mcp (TOOL_CALL_*).
	ToolType string
	// TargetID is the chain a rulechain or agent tool runs.
	TargetID string
	// DurationMs is how long a tool call, step or run took.
	DurationMs int64
	// IsError marks a failed or refused tool call, or a failed step.
	IsError bool
	// ErrorKind is the tool error kind (permission_denied, timeout, ...).
	ErrorKind string
	// Truncated marks a tool result cut to maxToolOutputLength, or a run
	// whose answer was forced at maxStep.
	Truncated bool
	// ArgsRewritten marks a tool call whose arguments an aspect changed.
	ArgsRewritten bool
	// ToolCallID attributes a STEP_* event to the tool call it runs inside
	// (the nodes of a rulechain tool).
	ToolCallID string
	// NodeID and ChainID name the rule-chain node of a step.
	NodeID  string
	ChainID string
	// Step is the LLM turn number of a step.
	Step int
	// Model is the model that answered (RUN_FINISHED, STEP_FINISHED).
	Model string
	// Attempt and Status describe a retried LLM call (CUSTOM retry events).
	Attempt int
	Status  int
	// InputTokens and OutputTokens are an LLM turn's usage (STEP_FINISHED
	// of a turn), so that a client can show tokens while the run goes on.
	InputTokens  int64
	OutputTokens int64
	// Cost is what an LLM turn (STEP_FINISHED) or a run (RUN_FINISHED,
	// RUN_ERROR) cost, a decimal number in Currency, when a price table
	// prices its model (see package ledger).
	Cost     string
	Currency string
}

// IsZero reports whether no Meta field is set.
func (m *Meta) IsZero() bool { return *m == Meta{} }

// Now returns the current time in Unix milliseconds, the AG-UI timestamp unit.
func Now() int64 { return time.Now().UnixMilli() }
