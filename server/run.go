package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
)

// ErrNoChain reports a chain id with nothing deployed.
var ErrNoChain = errors.New("no such chain")

// ErrReadOnly reports a change refused because the store is read-only
// (StoreOptions.ReadOnly, ruleagent serve --read-only).
var ErrReadOnly = errors.New("this server is read-only (--read-only)")

// ReadOnly reports whether the store refuses changes to its chains.
func (s *Store) ReadOnly() bool { return s.readOnly }

// RunRequest is one run of a chain.
type RunRequest struct {
	ChainID string
	// Input is the message data: text, or JSON such as {"messages": [...]}
	// (see agent.ParseInput). JSON objects are sent with data type JSON.
	Input    string
	Metadata map[string]string
	// ThreadID and RunID identify the run; empty ones are generated.
	ThreadID string
	RunID    string
	// MsgType is the message type ("CHAT" when empty), for chains that
	// route on it (msgTypeSwitch).
	MsgType string
	// Source says where the run came from (run, agui, openai, mcp, cli);
	// it is shown in the runs list.
	Source string
	// ParentRunID is the run this one was forked from: its RUN_STARTED
	// says so (AG-UI's parentRunId), and so does its record.
	ParentRunID string
	// Caller carries front-end tools, context and state to the chain's
	// agents (nil for none).
	Caller *agent.Caller
	// Sink receives the run's events, framed as one AG-UI run (nil for
	// none): see Store.Run.
	Sink events.Sink
	// Owner is the verified identity of the caller who started the run
	// (see package identity): empty when no verified identity is
	// configured, and for the operator's token. A run with an owner is
	// listed, cancelled and answered (its interrupts) only by that caller,
	// or by the operator.
	Owner string
	// NewThread says the server made ThreadID up: the caller gave none.
	// The run's per-session limits then fall back to the user.
	NewThread bool
	// Interruptible says the caller can answer interrupts (AG-UI resume,
	// POST /api/v1/runs/{id}/resume): a tool call that needs a person
	// pauses the run instead of being refused.
	Interruptible bool
	// Rejoinable says the caller can rejoin the run (the run and AG-UI
	// routes): when it goes away, a run that keeps a log goes on for the
	// rejoin grace instead of being cancelled at once (RunLog.RejoinGrace).
	Rejoinable bool
	// OnNode, when set, is told each node of the chain (not of the chains
	// it calls) as it tells its result: in order, from the goroutine that
	// ran the node (RuleGo's node-completed callback), so it must not
	// block. It is how a caller shows the chain's steps, as the editor's
	// live trace does.
	OnNode func(NodeStep)
	// StartAt, when set, enters the chain at these nodes instead of its
	// first one, with their messages (Input is then unused): the nodes a
	// run paused in while their questions were asked (RunResult.Asked).
	StartAt []components.StartPoint
	// Traceparent and Tracestate, with StartAt, are the W3C trace context
	// of the run's segment that paused for input (RunResult.Traceparent):
	// this one continues its trace (telemetry.ResumeUnder).
	Traceparent, Tracestate string
}

// NodeStep is a node of a run's chain that told its result.
type NodeStep struct {
	NodeID   string
	Relation string
	// Error is the node's error, empty when it had none.
	Error    string
	Duration time.Duration
}

// RunResult is how a run ended.
type RunResult struct {
	RunID    string
	ThreadID string
	// Msg is the chain's final message: the answer in its data, usage and
	// run ids in its metadata. It is zero when the run ended without one.
	Msg      types.RuleMsg
	Relation string
	// Outcome is success, cancelled or error.
	Outcome string
	// Error and ErrorCode describe a failed run (secrets scrubbed).
	Error     string
	ErrorCode string
	// Pending are the front-end tool calls the run ended on.
	Pending []events.ToolCall
	// Usage is the run's token usage per provider and model, sub-agents
	// included.
	Usage []events.TokenUsage
	// Cost is what the run's calls cost, a decimal number in Currency, as
	// its terminal event says, when a price table applies (else empty).
	Cost, Currency string
	// Interrupts are what the run waits for when Outcome is interrupt: it
	// goes on once they are answered (Store.Resume).
	Interrupts []events.Interrupt
	// Ends are every end of the chain, in the order of their end nodes in
	// the chain definition (components.ChainRun), when it ended more than
	// once (a chain with branches); Msg is the one that decides the
	// outcome: the last successful one, or the first failure.
	Ends []RunEnd
	// Asked are the nodes whose questions wait for an answer given later
	// (they ended with ask.ErrPending; Outcome is then interrupt, with no
	// Interrupts): the run goes on by entering them again
	// (RunRequest.StartAt) once the answers are in.
	Asked []AskedNode
	// Traceparent and Tracestate, with Asked and tracing on, are the W3C
	// trace context of the run's span, for the segment that goes on
	// (RunRequest.Traceparent).
	Traceparent, Tracestate string
}

// RunEnd is one end of a chain run.
type RunEnd struct {
	Msg      types.RuleMsg
	Relation string
	Error    string
}

// Run outcomes.
const (
	OutcomeSuccess   = "success"
	OutcomeCancelled = "cancelled"
	OutcomeError     = "error"
	// OutcomeInterrupt: the run is paused, waiting for Interrupts.
	OutcomeInterrupt = "interrupt"
)

// Run runs a chain once and waits for it to end. The run is listed in
// Runs() while it goes on, and Runs().Cancel stops it.
//
// Its events reach req.Sink framed as one AG-UI run, whatever the chain
// holds: RUN_STARTED (with the request's thread and run ids) first; then
// the events of its agent nodes (their own RUN_STARTED/FINISHED/ERROR are
// folded into the frame); then exactly one terminal event decided by how
// the chain ended: RUN_FINISHED with the final message as result (outcome
// success, with pendingToolCallIds when front-end tool calls wait), RUN_ERROR
// when it ended in Failure, or RUN_FINISHED outcome cancelled when it was
// cancelled (Runs().Cancel, the caller's context, the server stopping).
// Usage covers every agent of the chain and their sub-agents.
//
// A chain that fails returns its result with a non-nil error.
func (s *Store) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	if req.RunID == "" {
		req.RunID = agent.NewID("run-")
	}
	if req.ThreadID == "" {
		req.ThreadID, req.NewThread = agent.NewID("thread-"), true
	}
	res := RunResult{RunID: req.RunID, ThreadID: req.ThreadID}
	e, ok := s.Engine(req.ChainID)
	if !ok {
		return res, fmt.Errorf("%w: %q", ErrNoChain, req.ChainID)
	}
	st := newRunState(s, req)
	if err := s.prepare(ctx, e, st, nil); err != nil {
		return res, err
	}
	seg := st.attach(req.Sink, req.ThreadID, req.RunID)
	if len(req.StartAt) > 0 {
		st.run.StartAt(req.StartAt)
	} else {
		st.run.Start(s.newMessage(req))
	}
	return st.wait(ctx, seg)
}

// RunFailure is the error of a run that did not succeed. Message is safe
// to show (secrets scrubbed); Err is the underlying error, for errors.As
// (an *agent.LLMError, context.Canceled, ...).
type RunFailure struct {
	Outcome string // cancelled or error
	Code    string
	Message string
	Err     error
}

func (e *RunFailure) Error() string { return e.Message }

func (e *RunFailure) Unwrap() error { return e.Err }

// newMessage builds the chain's input message: the request's metadata,
// plus runId, threadId, and the caller's state as JSON under "state".
func (s *Store) newMessage(req RunRequest) types.RuleMsg {
	meta := types.NewMetadata()
	for k, v := range req.Metadata {
		// Only the server says whether it made the thread up (a caller
		// saying so would escape its thread's limits) and whom it
		// verified (a caller saying so would take another's thread).
		if k != agent.MetaThreadGenerated && k != agent.MetaVerifiedUser {
			meta.PutValue(k, v)
		}
	}
	if req.Owner != "" {
		meta.PutValue(agent.MetaVerifiedUser, req.Owner)
	}
	meta.PutValue("runId", req.RunID)
	meta.PutValue("threadId", req.ThreadID)
	if req.NewThread {
		meta.PutValue(agent.MetaThreadGenerated, "true")
	}
	if req.Caller != nil && len(req.Caller.State) > 0 && string(req.Caller.State) != "null" {
		meta.PutValue("state", string(req.Caller.State))
	}
	dt := types.TEXT
	if t := strings.TrimSpace(req.Input); strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") && json.Valid([]byte(t)) {
		dt = types.JSON
	}
	return types.NewMsg(0, cmp.Or(req.MsgType, "CHAT"), dt, meta, req.Input)
}

// resultJSON is RUN_FINISHED's result: the final message's data as JSON
// when it is JSON, else as a JSON string.
func resultJSON(m types.RuleMsg) json.RawMessage {
	if m.Data == nil {
		return nil
	}
	d := m.GetData()
	if m.DataType == types.JSON && json.Valid([]byte(d)) {
		return json.RawMessage(d)
	}
	b, _ := json.Marshal(d)
	return b
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// Result is the end of a chain run (see RunChain).
type Result = runs.Result

// RunChain runs chain id once with input as message data (JSON when it
// looks like a JSON object) and metadata md, streaming the run's events to
// sink (which may be nil). It waits for the chain to end. A chain that ends
// in Failure returns its message with the error. md's runId and threadId,
// when given, name the run.
func (s *Store) RunChain(ctx context.Context, id string, input string, md map[string]string, sink events.Sink) (Result, error) {
	res, err := s.Run(ctx, RunRequest{ChainID: id, Input: input, Metadata: md, ThreadID: md["threadId"],
		RunID: md["runId"], Source: md["source"], Sink: sink, Owner: identity.From(ctx).User})
	return Result{Msg: res.Msg, Relation: res.Relation, Usage: res.Usage, Cost: res.Cost, Currency: res.Currency}, err
}
