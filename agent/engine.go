// Package agent is the ReAct engine: an LLM turn, the tool calls it asks
// for (in parallel when there are several), their results back to the
// model, and the next turn, until a final answer. It streams every turn as
// AG-UI events into the run's Sink. It knows nothing of RuleGo.
package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Defaults of Config.
const (
	DefaultMaxStep             = 25
	DefaultMaxToolOutputLength = 50000
	DefaultRepeatLimit         = 3
	DefaultMaxParallel         = 8
	DefaultTimeout             = 10 * time.Minute
)

// Config configures an Agent.
type Config struct {
	// LLM answers the turns.
	LLM *Client
	// Tools are the tools offered to the model; nil offers none.
	Tools *tools.Set
	// Aspects intercept the run; nil means none.
	Aspects *aspects.Manager
	// MaxStep bounds the LLM turns of a run. When it is reached, one more
	// turn without tools forces an answer, marked as truncated.
	MaxStep int
	// MaxToolOutputLength truncates each tool result (characters).
	MaxToolOutputLength int
	// ParallelToolCalls runs the calls of one turn concurrently.
	ParallelToolCalls bool
	// MaxParallel bounds the concurrent calls of one turn.
	MaxParallel int
	// RepeatLimit refuses the Nth identical tool call of a run (the
	// doom-loop guard); negative disables it.
	RepeatLimit int
	// MaxToolCalls bounds the tool calls of a run; 0 = no limit.
	MaxToolCalls int
	// Timeout bounds the whole run; negative disables it.
	Timeout time.Duration
	// MaxConcurrentSubagents bounds the sub-agents a run has running at
	// once; 0 means no limit.
	MaxConcurrentSubagents int
	// Limits are the per-session, per-agent and token budgets.
	Limits Limits
	// Audit receives the audit records of the agent's tool calls and of
	// the limits its runs reach; nil records nothing.
	Audit audit.Sink
	// Approval says which tool calls need a person (nil: only form tools).
	Approval *tools.ApprovalPolicy
}

// Agent runs ReAct loops. It is safe for concurrent runs; all run state is
// per run, but for the count of runs in progress (Limits.ConcurrentRuns).
type Agent struct {
	cfg     Config
	running atomic.Int64
}

// New validates cfg and fills its defaults.
func New(cfg Config) (*Agent, error) {
	if cfg.LLM == nil {
		return nil, errors.New("agent: no LLM client")
	}
	if cfg.MaxStep == 0 {
		cfg.MaxStep = DefaultMaxStep
	}
	if cfg.MaxStep < 0 {
		return nil, fmt.Errorf("maxStep: must be positive")
	}
	if cfg.MaxToolOutputLength == 0 {
		cfg.MaxToolOutputLength = DefaultMaxToolOutputLength
	}
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = DefaultMaxParallel
	}
	if cfg.RepeatLimit == 0 {
		cfg.RepeatLimit = DefaultRepeatLimit
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Limits.fill()
	return &Agent{cfg: cfg}, nil
}

// Input is what a run starts from.
type Input struct {
	// Messages is the conversation: the user's messages, and any history.
	Messages []events.Message
	// SystemPrompt is the agent's own system prompt (already rendered). It
	// always comes first; a caller's system messages cannot replace it.
	SystemPrompt string
	ThreadID     string
	RunID        string
	ParentRunID  string
	// Point identifies the run for aspects (chain, node, user, metadata).
	Point aspects.Point
	// Stream asks the LLM for a streamed answer, so that every delta
	// reaches the Sink as it arrives.
	Stream bool
	// Bind holds the values of bound tool parameters.
	Bind tools.BindValues
	// Scrubber redacts tool results and errors of this run.
	Scrubber tools.Scrubber
	// LLM, when set, answers this run instead of Config.LLM (a session's
	// model).
	LLM *Client
	// Memory, when set, supplies the conversation the run continues and
	// keeps what it adds (see Memory).
	Memory Memory
	// Policy are the tool policies of the run: the node's, the server's,
	// and those inherited from the agents above (nil: none).
	Policy *policy.Restrictions
}

// Output is what a run produced.
type Output struct {
	aspects.RunOutput
	RunID    string
	ThreadID string
	// Pending are the calls of the caller's tools (Caller.Tools) the run
	// left for the caller to answer; the run ended on them.
	Pending []events.ToolCall
}

// Run error codes, in RUN_ERROR events and RunError.Code (with CodeLimit
// and CodeSession). Only a failure of the LLM call itself is CodeLLM.
const (
	// CodeCancelled: the run's context ended (a cancel, a client gone).
	CodeCancelled = "cancelled"
	// CodeTimeout: the run outlived Config.Timeout.
	CodeTimeout = "timeout"
	// CodeLLM: the LLM call failed, after retries and failover (an HTTP
	// error, a broken or stalled stream, a malformed answer).
	CodeLLM = "llm_error"
	// CodeRefused: an aspect refused (returned an error at its point).
	CodeRefused = "aspect_refused"
	// CodeAspect: an aspect broke its contract (an Around aspect that
	// returned neither an output nor an error).
	CodeAspect = "aspect_error"
	// CodeInternal: anything else, a recovered panic included.
	CodeInternal = "internal_error"
	// CodePanic is CodeInternal, the code of a recovered panic.
	CodePanic = CodeInternal
)

// RunError is a failed run. Code is one of the Code* constants.
type RunError struct {
	Code string
	// Limit names the limit that ended the run (limits.*): with
	// CodeLimit, and with CodeTimeout (limits.Timeout).
	Limit string
	Err   error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// NewID returns a random identifier with the given prefix.
func NewID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Run runs one conversation to its answer, streaming its events to sink.
// Exactly one terminal event (RUN_FINISHED or RUN_ERROR) is emitted. A
// panic anywhere in the run becomes a run error.
//
// A run whose calls wait for answers from outside it (an approval, a
// paused sub-agent: see tools.ErrPaused) pauses: Run returns a
// *SuspendedError holding its Suspension, emits no terminal event, and
// Resume goes on from it.
func (a *Agent) Run(ctx context.Context, in Input, sink events.Sink) (out *Output, err error) {
	start := time.Now()
	if in.RunID == "" {
		in.RunID = NewID("run-")
	}
	sessionKey := sessionKeyOf(&in)
	if in.ThreadID == "" {
		in.ThreadID = NewID("thread-")
	}
	r := a.newRun(ctx, &in, sink, sessionKey)
	r.started = start
	ctx = r.startTap(WithLedger(WithCaller(ctx, nil), r.ledger))
	ctx, span := r.startSpan(ctx)
	defer func() { r.endSpan(span, err) }()
	defer r.recoverRun(&out, &err)

	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.cfg.Timeout, errRunTimeout)
		defer cancel()
	}
	r.stream.Emit(events.Event{Type: events.RunStarted, ParentRunID: in.ParentRunID})

	// The limits admit the run before its session's memory is read.
	res, err := r.protected(func() (*aspects.RunOutput, error) {
		return r.admitted(ctx, func(ctx context.Context) (*aspects.RunOutput, error) {
			if err := r.recall(ctx); err != nil {
				return nil, err
			}
			res, err := r.lifecycle(ctx)
			if err == nil {
				err = r.keep(ctx, res)
			}
			return res, err
		})
	})
	return r.end(ctx, start, res, err)
}

// newRun is the state of a run of in, streaming into sink. The caller's
// tools and context are for this run only: whatever this run calls (rule
// chains, sub-agents, MCP) has this run as its caller. Usage adds up here
// and in every run above (a sub-agent's calls count in its parent's
// usage).
func (a *Agent) newRun(ctx context.Context, in *Input, sink events.Sink, sessionKey string) *run {
	p := in.Point
	p.RunID, p.ThreadID = in.RunID, in.ThreadID
	r := &run{agent: a, in: in, stream: events.NewStream(sink, in.ThreadID, in.RunID), point: &p, caller: CallerFrom(ctx),
		ledger: NewLedger(LedgerFrom(ctx)), sessionKey: sessionKey}
	p.Model = r.llm().Model()
	return r
}

// recoverRun turns a panic of the run into its run error.
func (r *run) recoverRun(out **Output, err *error) {
	if v := recover(); v != nil {
		slog.Error("agent run panicked", "run", r.in.RunID, "panic", v, "stack", string(debug.Stack()))
		*out, *err = nil, &RunError{Code: CodePanic, Err: fmt.Errorf("internal error: %v", v)}
		r.stream.Emit(events.Event{Type: events.RunError, Message: (*err).Error(), Code: CodePanic})
	}
}

// end ends a run that started at start with its output or error: the
// Completed point and the terminal event; a suspended run has neither.
func (r *run) end(ctx context.Context, start time.Time, res *aspects.RunOutput, err error) (*Output, error) {
	st, in := r.stream, r.in
	var se *SuspendedError
	if errors.As(err, &se) {
		// What the run added to its session's tokens so far, counted when
		// admitted ended.
		se.Suspension.SessionAdded = r.sessionAdded
		return nil, se
	}
	if res != nil {
		res.Duration = time.Since(start)
	}
	r.completed(ctx, res, err)
	if err != nil {
		err = r.classify(ctx, err)
		re := err.(*RunError)
		if re.Limit != "" {
			r.limitReached(re, time.Since(start))
		}
		if re.Code == CodeCancelled {
			// AG-UI's own ending for a run stopped by whoever ran it: neither
			// a success nor a failure of the agent.
			st.Emit(events.Event{Type: events.RunFinished, Outcome: events.OutcomeCancelled, Usage: r.ledger.Entries(),
				Meta: events.Meta{Step: r.point.Step, DurationMs: time.Since(start).Milliseconds()}})
			return nil, err
		}
		st.Emit(events.Event{Type: events.RunError, Message: r.scrub(err.Error()), Code: re.Code, Usage: r.ledger.Entries()})
		return nil, err
	}
	result, _ := json.Marshal(res.Content)
	pending := make([]string, len(r.pending))
	for i, c := range r.pending {
		pending[i] = c.ID
	}
	st.Emit(events.Event{Type: events.RunFinished, Result: result, Usage: r.ledger.Entries(), PendingToolCallIDs: pending,
		Meta: events.Meta{Truncated: res.Truncated, Step: res.Steps, Model: res.Model, DurationMs: res.Duration.Milliseconds()}})
	return &Output{RunOutput: *res, RunID: in.RunID, ThreadID: in.ThreadID, Pending: r.pending}, nil
}

var errRunTimeout = errors.New("the run took longer than its timeout")

// protected runs fn, turning a panic into a run error, so that what
// follows it (the Completed point, the terminal event) always happens.
func (r *run) protected(fn func() (*aspects.RunOutput, error)) (res *aspects.RunOutput, err error) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("agent run panicked", "run", r.in.RunID, "panic", v, "stack", string(debug.Stack()))
			res, err = nil, &RunError{Code: CodePanic, Err: fmt.Errorf("internal error: %v", v)}
		}
	}()
	return fn()
}

// completed runs the Completed point, last, with a copy of the output:
// it observes the run, it does not change it.
func (r *run) completed(ctx context.Context, res *aspects.RunOutput, err error) {
	am := r.agent.cfg.Aspects
	if !am.HasCompleted() {
		return
	}
	var seen *aspects.RunOutput
	if res != nil {
		c := *res
		c.Messages = slices.Clone(res.Messages)
		seen = &c
	}
	am.Completed(ctx, r.point, seen, err)
}

// lifecycle runs the RunStart, Before, Around and After points around the loop.
func (r *run) lifecycle(ctx context.Context) (*aspects.RunOutput, error) {
	am := r.agent.cfg.Aspects
	input := &aspects.RunInput{Messages: r.in.Messages, SystemPrompt: r.in.SystemPrompt}
	if err := am.RunStart(ctx, r.point, input); err != nil {
		return nil, err
	}
	if err := am.Before(ctx, r.point, input); err != nil {
		return nil, err
	}
	out, err := am.Around(ctx, r.point, input, r.loop)
	if err != nil {
		return out, err
	}
	if out == nil {
		return nil, &RunError{Code: CodeAspect, Err: errors.New("an Around aspect returned no output")}
	}
	if r.point.Step == 0 && out.Content != "" {
		// An Around aspect answered without the loop: its answer is sent
		// as the text message the loop would have streamed.
		id := r.in.RunID + "-msg-0"
		r.stream.Emit(events.Event{Type: events.TextMessageStart, MessageID: id, Role: "assistant"})
		r.stream.Emit(events.Event{Type: events.TextMessageContent, MessageID: id, Delta: out.Content})
		r.stream.Emit(events.Event{Type: events.TextMessageEnd, MessageID: id})
	}
	if err := am.After(ctx, r.point, out); err != nil {
		return out, err
	}
	return out, nil
}

// classify turns any run failure into a *RunError with a code.
func (r *run) classify(ctx context.Context, err error) error {
	var re *RunError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &re) {
		// Whoever stopped the run said why, with a code (a session's lease
		// lost: lease_lost).
		return re
	}
	if errors.As(err, &re) {
		return re
	}
	switch {
	case errors.Is(context.Cause(ctx), errRunTimeout):
		return &RunError{Code: CodeTimeout, Limit: limits.Timeout, Err: fmt.Errorf("%w (%s)", errRunTimeout, r.agent.cfg.Timeout)}
	case ctx.Err() != nil:
		return &RunError{Code: CodeCancelled, Err: fmt.Errorf("the run was cancelled: %w", context.Cause(ctx))}
	case errors.Is(err, aspects.ErrRefused):
		return &RunError{Code: CodeRefused, Err: err}
	}
	var le *LLMError
	if errors.As(err, &le) {
		return &RunError{Code: CodeLLM, Err: err}
	}
	return &RunError{Code: CodeInternal, Err: err}
}

func (r *run) scrub(s string) string {
	if r.in.Scrubber != nil {
		return r.in.Scrubber.Scrub(s)
	}
	return s
}
