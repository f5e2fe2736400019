// Package audit is the append-only trail of what agents did: every tool
// call with its policy decision and outcome, and every limit reached. A
// Sink receives Records; Log writes them as JSON lines, one file per UTC
// day, from a background writer behind a bounded queue, so that a run never
// waits on the disk for long.
//
// The package sits beside aspects, below tools: it knows nothing of tools,
// agents or RuleGo. The tools wrapper and the agent fill the records;
// whoever runs the agents (the server) opens the Log and hands it to them.
package audit

import (
	"encoding/json"
	"time"
)

// Sink receives audit records. Record must not block for long, and must be
// safe for concurrent use.
type Sink interface {
	Record(Record)
}

// Record kinds.
const (
	// KindToolCall is one tool call: its policy decision, its outcome, and
	// the limit that refused it, if one did.
	KindToolCall = "tool_call"
	// KindLimit is a run-level limit reached (tokens, wall time,
	// concurrent runs): the run ended, or was refused, there.
	KindLimit = "limit"
)

// Outcomes of a record.
const (
	// OutcomeOK: the call ran and succeeded.
	OutcomeOK = "ok"
	// OutcomeError: the call was made and failed, or was refused by
	// something other than a policy or a limit (invalid arguments, the
	// repeat guard, an aspect); ErrorKind says which.
	OutcomeError = "error"
	// OutcomeDenied: a tool policy refused the call (Decision says which),
	// or a person did not approve it (Approval says how).
	OutcomeDenied = "denied"
	// OutcomeLimit: a limit refused the call, or ended the run; Limit says
	// which.
	OutcomeLimit = "limit_exceeded"
)

// Decision is how a call was judged before it ran, by a tool policy
// (Record.Decision) or by a person (Record.Approval), in the same shape.
type Decision struct {
	// Effect is "allow" or "deny".
	Effect string `json:"effect"`
	// Layer is who decided: "server" or "node <chain>/<node>" for a tool
	// policy, LayerPerson for an approval.
	Layer string `json:"layer,omitempty"`
	// Rule is the kind of rule. A tool policy's: deny, subagentDeny, allow,
	// profile, alsoAllow, or default (no profile nor allow list). An
	// approval's: approve, edit (approved with edited arguments), always
	// (approved "always" earlier in the thread: nobody was asked), answer (a
	// form answered), deny (denied, or nobody answered in time),
	// unanswered (the approval failed) or unavailable (nobody can approve
	// calls of this run).
	Rule string `json:"rule,omitempty"`
	// Match is the entry that decided (a group, a name, a glob, or
	// profile:<name>).
	Match string `json:"match,omitempty"`
	// Inherited is true when the deciding policy belongs to an agent that
	// called this one.
	Inherited bool `json:"inherited,omitempty"`
	// Reason is what the person said (scrubbed), for an approval.
	Reason string `json:"reason,omitempty"`
	// Commands are the parsed commands a person judged (bash).
	Commands []string `json:"commands,omitempty"`
}

// LayerPerson is the Layer of an approval decision.
const LayerPerson = "person"

// Record is one line of the audit log.
type Record struct {
	// Time is when the call ended or the limit was reached; Record fills
	// it in when zero.
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`

	RunID       string `json:"runId"`
	ParentRunID string `json:"parentRunId,omitempty"`
	ThreadID    string `json:"threadId,omitempty"`
	// SessionKey is the key of the per-session limits: the thread id the
	// caller gave, else the user id, else the run id.
	SessionKey string `json:"sessionKey,omitempty"`
	UserID     string `json:"userId,omitempty"`
	ChainID    string `json:"chainId,omitempty"`
	NodeID     string `json:"nodeId,omitempty"`

	ToolCallID string `json:"toolCallId,omitempty"`
	Tool       string `json:"tool,omitempty"`
	// ToolType is builtin, rulechain, agent or mcp.
	ToolType string `json:"toolType,omitempty"`
	TargetID string `json:"targetId,omitempty"`
	// Args are the call's arguments, scrubbed of secrets with the run's
	// scrubber (see Args). They are the arguments that ran, after any
	// aspect rewrote them (ArgsRewritten).
	Args          json.RawMessage `json:"args,omitempty"`
	ArgsRewritten bool            `json:"argsRewritten,omitempty"`

	Decision *Decision `json:"decision,omitempty"`
	// Approval is a person's decision, for a call that needed one.
	Approval  *Decision `json:"approval,omitempty"`
	Outcome   string    `json:"outcome"`
	ErrorKind string    `json:"errorKind,omitempty"`
	// Error is the error text (scrubbed, and cut to MaxErrorLen).
	Error string `json:"error,omitempty"`

	// Limit names the limit reached (limits.*), with its maximum and what
	// was used.
	Limit string `json:"limit,omitempty"`
	Max   int64  `json:"max,omitempty"`
	Used  int64  `json:"used,omitempty"`

	DurationMs int64 `json:"durationMs"`
}

// MaxErrorLen bounds Record.Error: the trail says what failed, the run's
// events carry the full text.
const MaxErrorLen = 2000

// Args turns scrubbed argument text into Record.Args: as JSON when it
// still is (scrubbing replaces text inside strings), as a JSON string
// otherwise, so that a line of the log is always valid JSON.
func Args(scrubbed string) json.RawMessage {
	if scrubbed == "" {
		return nil
	}
	if json.Valid([]byte(scrubbed)) {
		return json.RawMessage(scrubbed)
	}
	b, _ := json.Marshal(scrubbed)
	return b
}

// ErrorText cuts s to MaxErrorLen bytes, on a character boundary.
func ErrorText(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
