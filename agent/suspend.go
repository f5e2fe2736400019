package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// A run suspends when calls of its turn wait for answers from outside it
// (tools.ErrPaused: a person's approval, a sub-agent that paused). The
// turn's other calls finish first; then Run returns a *SuspendedError and
// emits nothing more: no terminal event, no After or Completed aspects.
// Its Suspension is plain data, everything the run needs to go on where
// it stopped, in this process or another, and Resume goes on from it:
// the waiting calls get their answers (tools.Set.Resume), the calls a
// sequential turn had not started yet run, and the loop goes on as the
// run would have, had it waited.

// Suspension is a suspended run.
type Suspension struct {
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
	// StartedAt is when the run started: its timeout counts from there,
	// the pause included, as it would had the run waited.
	StartedAt time.Time `json:"startedAt"`
	// Step is the turn whose calls wait.
	Step int `json:"step"`
	// Messages is the conversation the loop runs on (system prompt
	// first), ending with the turn's assistant message; FirstNew is where
	// the messages the run added begin.
	Messages []events.Message `json:"messages"`
	FirstNew int              `json:"firstNew"`
	// Calls are the turn's calls the agent makes, in order, and what
	// became of each; Theirs are the turn's calls of the caller's tools,
	// left pending when the turn is done; Streamed are the calls announced
	// while the model streamed them.
	Calls    []CallState       `json:"calls"`
	Theirs   []events.ToolCall `json:"theirs,omitempty"`
	Streamed []string          `json:"streamed,omitempty"`
	// ToolCalls counts the calls of the turns before this one.
	ToolCalls int `json:"toolCalls,omitempty"`
	// Model is the model that answered last (after a failover, the
	// backup's).
	Model string `json:"model,omitempty"`
	// Usage is what the run spent so far, its sub-agents included.
	Usage []LedgerEntry `json:"usage,omitempty"`
	// SessionAdded is what the run added to its session's token count.
	SessionAdded int64 `json:"sessionAdded,omitempty"`
	// CallIDs are the tool-call ids used so far (unique in the run), and
	// Counters the tool calls' limits and ids.
	CallIDs  map[string]int    `json:"callIds,omitempty"`
	Counters tools.RunCounters `json:"counters"`
	// TapKey is the key the context's Tap gave the run when it started
	// (see Tap.StartAgent): the resumed run records and replays under it.
	TapKey string `json:"tapKey,omitempty"`
}

// Waiting returns the interrupts the run's calls wait for, and the chain
// runs they started that paused (a sub-agent's, whose own interrupts are
// inside it).
func (s *Suspension) Waiting() (interrupts []string, chains []*tools.ChainPause) {
	for _, c := range s.Calls {
		switch {
		case c.Paused == nil:
		case c.Paused.Chain != nil:
			chains = append(chains, c.Paused.Chain)
		case c.Paused.InterruptID != "":
			interrupts = append(interrupts, c.Paused.InterruptID)
		}
	}
	return interrupts, chains
}

// Check reports what makes s impossible to resume: the turn's calls must
// be those of its last message, each with at most one outcome (a result,
// or what it waits for), at least one waiting; a call with neither comes
// after a waiting one (a sequential turn stopped there).
func (s *Suspension) Check() error {
	bad := func(format string, a ...any) error {
		return &RunError{Code: CodeInternal, Err: fmt.Errorf("a suspended run cannot be resumed: "+format, a...)}
	}
	if s == nil || s.RunID == "" || len(s.Messages) == 0 || s.FirstNew < 0 || s.FirstNew > len(s.Messages) {
		return bad("no run id or conversation")
	}
	last := s.Messages[len(s.Messages)-1]
	if last.Role != events.RoleAssistant || len(last.ToolCalls) != len(s.Calls)+len(s.Theirs) {
		return bad("the conversation does not end with the turn's %d calls", len(s.Calls)+len(s.Theirs))
	}
	made := map[string]bool{}
	for _, c := range last.ToolCalls {
		made[c.ID] = true
	}
	waiting := false
	for _, c := range s.Calls {
		switch {
		case !made[c.Call.ID]:
			return bad("call %s is not one of the turn's", c.Call.ID)
		case c.Result != nil && c.Paused != nil:
			return bad("call %s has a result and waits", c.Call.ID)
		case c.Paused != nil && (c.Paused.InterruptID == "") == (c.Paused.Chain == nil):
			return bad("call %s waits for an interrupt or a chain run, not both or neither", c.Call.ID)
		case c.Paused != nil:
			waiting = true
		case c.Result == nil && !waiting:
			return bad("call %s has no outcome, and no call before it waits", c.Call.ID)
		}
		delete(made, c.Call.ID)
	}
	for _, c := range s.Theirs {
		delete(made, c.ID)
	}
	if len(made) > 0 || !waiting {
		return bad("the turn's calls are not all accounted for, or none waits")
	}
	return nil
}

// ErrSuspended is the error of a suspended run (errors.Is): see
// SuspendedError.
var ErrSuspended = errors.New("the run is suspended: its calls wait for answers")

// SuspendedError is what Run and Resume return for a run that suspended.
type SuspendedError struct {
	Suspension *Suspension
}

func (e *SuspendedError) Error() string { return ErrSuspended.Error() }

func (e *SuspendedError) Unwrap() error { return ErrSuspended }

// suspend is the suspension of the run at turn step, whose own calls are
// calls (some waiting).
func (r *run) suspend(ls *loopState, step int, turn *turnResult, theirs []events.ToolCall, calls []CallState) error {
	r.mu.Lock()
	model := r.model
	r.mu.Unlock()
	return &SuspendedError{Suspension: &Suspension{RunID: r.in.RunID, ThreadID: r.in.ThreadID, StartedAt: r.started,
		Step: step, Messages: slices.Clone(ls.conv), FirstNew: ls.firstNew, Calls: slices.Clone(calls), Theirs: theirs,
		Streamed: turn.streamed, ToolCalls: ls.out.ToolCalls, Model: model, Usage: r.ledger.snapshot(),
		CallIDs: maps.Clone(r.callIDs), Counters: r.tools.Counters(), TapKey: r.tapKey()}}
}

// Resume goes on with a suspended run: in is the input the run started
// with (its settings; the conversation is the suspension's), and its
// events stream into sink as they would have, had the run waited (no
// RUN_STARTED: the run goes on). It ends as Run does, or suspends again.
// The caller puts in ctx what answers the waiting calls: the approver,
// and for a paused sub-agent what it needs to go on.
func (a *Agent) Resume(ctx context.Context, in Input, s *Suspension, sink events.Sink) (out *Output, err error) {
	if err := s.Check(); err != nil {
		// The run's stream is open where it paused: it ends here.
		id := in.RunID
		if s != nil && s.RunID != "" {
			id = s.RunID
		}
		events.NewStream(sink, in.ThreadID, id).Emit(events.Event{Type: events.RunError, Message: err.Error(), Code: CodeInternal})
		return nil, err
	}
	in.RunID, in.ThreadID = s.RunID, s.ThreadID
	r := a.newRun(ctx, &in, sink, sessionKeyOf(&in))
	r.started, r.model, r.callIDs, r.sessionAdded = s.StartedAt, s.Model, maps.Clone(s.CallIDs), s.SessionAdded
	r.ledger.restore(s.Usage)
	ctx = r.resumeTap(WithLedger(WithCaller(ctx, nil), r.ledger), s.TapKey)
	ctx, span := r.startSpan(ctx)
	defer func() { r.endSpan(span, err) }()
	defer r.recoverRun(&out, &err)

	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, s.StartedAt.Add(a.cfg.Timeout), errRunTimeout)
		defer cancel()
	}
	res, err := r.protected(func() (*aspects.RunOutput, error) {
		return r.admitted(ctx, func(ctx context.Context) (*aspects.RunOutput, error) {
			res, err := r.resumeLifecycle(ctx, s)
			if err == nil {
				err = r.keep(ctx, res)
			}
			return res, err
		})
	})
	return r.end(ctx, s.StartedAt, res, err)
}

// resumeLifecycle runs the Around and After points around the loop that
// goes on; RunStart and Before ran when the run started.
func (r *run) resumeLifecycle(ctx context.Context, s *Suspension) (*aspects.RunOutput, error) {
	am := r.agent.cfg.Aspects
	input := &aspects.RunInput{Messages: r.in.Messages, SystemPrompt: r.in.SystemPrompt}
	out, err := am.Around(ctx, r.point, input, func(ctx context.Context, _ *aspects.RunInput) (*aspects.RunOutput, error) {
		return r.resumeLoop(ctx, s)
	})
	if err != nil {
		return out, err
	}
	if out == nil {
		return nil, &RunError{Code: CodeAspect, Err: errors.New("an Around aspect returned no output")}
	}
	if err := am.After(ctx, r.point, out); err != nil {
		return out, err
	}
	return out, nil
}

// resumeLoop finishes the suspended turn, then goes on with the loop.
func (r *run) resumeLoop(ctx context.Context, s *Suspension) (*aspects.RunOutput, error) {
	r.newTools()
	r.tools.SetCounters(s.Counters)
	ls := &loopState{conv: slices.Clone(s.Messages), firstNew: s.FirstNew}
	ls.out.Steps, ls.out.ToolCalls = s.Step, s.ToolCalls
	r.point.Step = s.Step
	last := ls.conv[len(ls.conv)-1]
	turn := &turnResult{Turn: &Turn{Content: last.Content, Reasoning: last.Reasoning, ToolCalls: last.ToolCalls},
		messageID: last.ID, streamed: s.Streamed}
	done, err := r.toolTurn(ctx, ls, s.Step, turn, s.Theirs, slices.Clone(s.Calls))
	if err != nil {
		return nil, err
	}
	if done {
		return r.output(ls), nil
	}
	return r.steps(ctx, ls, s.Step+1)
}

// LedgerEntry is a ledger's usage of one provider and model, as a
// suspension keeps it.
type LedgerEntry struct {
	Provider string        `json:"provider,omitempty"`
	Model    string        `json:"model,omitempty"`
	Usage    aspects.Usage `json:"usage"`
}

// Snapshot returns what the ledger holds, for a run that goes on elsewhere
// (Restore).
func (l *Ledger) Snapshot() []LedgerEntry { return l.snapshot() }

// Restore adds entries to this ledger only (not to its parents, which
// keep their own): a resumed run's ledger goes on from what it had spent.
func (l *Ledger) Restore(entries []LedgerEntry) { l.restore(entries) }

func (l *Ledger) snapshot() []LedgerEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LedgerEntry, len(l.byKey))
	for i, e := range l.byKey {
		out[i] = LedgerEntry{Provider: e.provider, Model: e.model, Usage: e.u}
	}
	return out
}

func (l *Ledger) restore(entries []LedgerEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		i := slices.IndexFunc(l.byKey, func(x usageEntry) bool { return x.provider == e.Provider && x.model == e.Model })
		if i < 0 {
			l.byKey = append(l.byKey, usageEntry{provider: e.Provider, model: e.Model})
			i = len(l.byKey) - 1
		}
		l.byKey[i].u.Add(e.Usage)
	}
}
