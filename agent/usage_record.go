package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
)

// Recorder keeps what a whole run spends, beyond its terminal event's
// usage: the server's usage ledger implements it. It sits on the root
// ledger of a run (NewRecordingLedger), so every LLM call and tool call of
// the run reaches it exactly once, whichever agent made it: sub-agents'
// ledgers add up into their caller's, and only the root reports.
//
// LLMCall and ToolCall are called on the run's path (after the call, never
// per streamed chunk): they must be cheap and must not block on I/O.
type Recorder interface {
	// LLMCall records one LLM call and returns its cost as a decimal
	// string in currency ("" when the model has no price).
	LLMCall(c LLMCall) (cost, currency string)
	// ToolCall records one tool call the agent ran.
	ToolCall(c ToolCallUse)
	// Admit is asked before each LLM call of the run: an error refuses
	// it, and the run ends. A *limits.Exceeded names the budget spent;
	// any other error (the ledger cannot be read) refuses too.
	Admit(ctx context.Context) error
}

// LLMCall is one LLM call as the agent that made it knows it. Calls made
// outside an agent's loop (ai/intent, session compaction) carry only the
// provider, model and usage.
type LLMCall struct {
	Provider string
	// Model is the model that answered: after a failover, the fallback's.
	Model string
	Usage aspects.Usage
	// RunID, ParentRunID, ChainID and NodeID name the agent run that made
	// the call (a sub-agent's own run id, its caller's run as parent).
	RunID, ParentRunID string
	ChainID, NodeID    string
	// Step is the LLM turn of that run (1-based); 0 outside a loop.
	Step int
	// Duration is the call's wall time, retries and failover included.
	Duration time.Duration
}

// ToolCallUse is one tool call an agent ran, with how long it took.
type ToolCallUse struct {
	RunID, ChainID, NodeID string
	Step                   int
	ToolCallID, Name, Type string
	Duration               time.Duration
	IsError                bool
	ErrorKind              string
}

// NewRecordingLedger returns a root ledger (no parent) that reports every
// call added to it or to its descendants to rec.
func NewRecordingLedger(rec Recorder) *Ledger { return &Ledger{rec: rec} }

// root is the ledger at the top of l's parents (nil for a nil l).
func (l *Ledger) root() *Ledger {
	for l != nil && l.parent != nil {
		l = l.parent
	}
	return l
}

// AddCall adds c's usage here and in every parent, and reports the call to
// the root's Recorder, whose cost it returns. A nil ledger does nothing.
func (l *Ledger) AddCall(c LLMCall) (cost, currency string) {
	l.add(c.Provider, c.Model, c.Usage)
	if r := l.root(); r != nil && r.rec != nil {
		return r.rec.LLMCall(c)
	}
	return "", ""
}

// Tool reports a tool call to the root's Recorder, if there is one.
func (l *Ledger) Tool(c ToolCallUse) {
	if r := l.root(); r != nil && r.rec != nil {
		r.rec.ToolCall(c)
	}
}

// Admit asks the root's Recorder whether the run may make its next LLM
// call. A refusal is a *RunError with CodeLimit, naming the budget.
func (l *Ledger) Admit(ctx context.Context) error {
	r := l.root()
	if r == nil || r.rec == nil {
		return nil
	}
	err := r.rec.Admit(ctx)
	if err == nil {
		return nil
	}
	var ex *limits.Exceeded
	if errors.As(err, &ex) {
		return limitError(ex)
	}
	// A budget that cannot be checked refuses: it never opens by accident.
	return &RunError{Code: CodeLimit, Limit: "budget", Err: fmt.Errorf("%w: the usage budget cannot be checked: %w", tools.ErrLimitExceeded, err)}
}

// recordLLM adds a turn's call to the run's ledger and returns its cost.
func (r *run) recordLLM(t *Turn, model string, step int, start time.Time) (cost, currency string) {
	return r.ledger.AddCall(LLMCall{Provider: t.Provider, Model: model, Usage: t.Usage, RunID: r.in.RunID,
		ParentRunID: r.in.ParentRunID, ChainID: r.point.ChainID, NodeID: r.point.NodeID, Step: step, Duration: time.Since(start)})
}

// recordTool reports a tool call of the run to the ledger's Recorder.
func (r *run) recordTool(id, name string, o *tools.Outcome) {
	if r.ledger.root().rec == nil {
		return
	}
	typ := ""
	if e := r.agent.cfg.Tools.Lookup(name); e != nil {
		typ = e.Type
	}
	r.ledger.Tool(ToolCallUse{RunID: r.in.RunID, ChainID: r.point.ChainID, NodeID: r.point.NodeID, Step: r.point.Step,
		ToolCallID: id, Name: name, Type: typ, Duration: o.Duration, IsError: o.IsError, ErrorKind: o.Kind})
}
