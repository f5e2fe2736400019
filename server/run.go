package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/runs"
)

// ErrNoChain reports a chain id with nothing deployed.
var ErrNoChain = errors.New("no such chain")

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
	// Caller carries front-end tools, context and state to the chain's
	// agents (nil for none).
	Caller *agent.Caller
	// Sink receives the run's events, framed as one AG-UI run (nil for
	// none): see Store.Run.
	Sink events.Sink
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
	// Ends are every end of the chain, in the order they happened, when
	// it ended more than once (a chain with branches); Msg is the one that
	// decides the outcome.
	Ends []RunEnd
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
		req.ThreadID = agent.NewID("thread-")
	}
	res := RunResult{RunID: req.RunID, ThreadID: req.ThreadID}
	e, ok := s.Engine(req.ChainID)
	if !ok {
		return res, fmt.Errorf("%w: %q", ErrNoChain, req.ChainID)
	}
	out := req.Sink
	if out == nil {
		out = events.Discard
	}
	chainID, runID := req.ChainID, req.RunID
	stream := events.NewStream(events.SinkFunc(func(ev events.Event) {
		s.live.Event(chainID, runID, &ev)
		out.Emit(ev)
	}), req.ThreadID, req.RunID)
	run, rctx, err := s.runs.Start(ctx, runs.Info{RunID: req.RunID, ThreadID: req.ThreadID, ChainID: req.ChainID,
		Source: req.Source}, stream)
	if err != nil {
		return res, err
	}
	defer s.runs.End(run)
	started := time.Now()
	metrics.ActiveRuns.Inc()

	fr := &frame{out: run}
	ledger := agent.NewLedger(nil)
	rctx = agent.WithLedger(events.WithSink(rctx, fr), ledger)
	if req.Caller != nil {
		rctx = agent.WithCaller(rctx, req.Caller)
	}
	run.Emit(events.Event{Type: events.RunStarted, ProtocolVersion: events.ProtocolVersion})

	msg := s.newMessage(req)
	opts := []types.RuleContextOption{types.WithContext(rctx), types.WithOnEnd(fr.end)}
	if s.live.Watching(req.ChainID) {
		opts = append(opts, types.WithDebugMode(true), types.WithOnNodeCompleted(s.nodeDone(req.ChainID, req.RunID)))
	}
	if s.live.Clients() > 0 {
		// Chains the run calls as tools report their nodes too.
		rctx = components.WithTrace(rctx)
		opts[0] = types.WithContext(rctx)
	}
	e.OnMsgAndWait(msg, opts...)

	res.Usage = ledger.Entries()
	if req.Caller != nil {
		res.Pending = req.Caller.Pending()
	}
	fr.finish(rctx, &res)
	term := events.Event{Type: events.RunFinished, Usage: res.Usage, Meta: fr.meta}
	switch res.Outcome {
	case OutcomeCancelled:
		term.Outcome, term.Result, term.Meta = events.OutcomeCancelled, nil, events.Meta{}
	case OutcomeError:
		term = events.Event{Type: events.RunError, Message: res.Error, Code: res.ErrorCode, Usage: res.Usage}
	default:
		term.Result = resultJSON(res.Msg)
		for _, c := range res.Pending {
			term.PendingToolCallIDs = append(term.PendingToolCallIDs, c.ID)
		}
	}
	term.Meta.DurationMs = time.Since(started).Milliseconds()
	run.Emit(term)
	s.log.Info("run", "run", req.RunID, "thread", req.ThreadID, "chain", req.ChainID, "source", cmp.Or(req.Source, "api"),
		"outcome", res.Outcome, "duration", time.Since(started).Round(time.Millisecond), "toolCalls", run.Info().ToolCalls,
		"tokens", run.Info().Usage.TotalTokens)
	metrics.ActiveRuns.Dec()
	metrics.ChainRuns.WithLabelValues(req.ChainID, cmp.Or(req.Source, "api"), res.Outcome).Inc()
	metrics.ChainRunDuration.WithLabelValues(req.ChainID).Observe(time.Since(started).Seconds())
	if res.Outcome != OutcomeSuccess {
		return res, &RunFailure{Outcome: res.Outcome, Code: res.ErrorCode, Message: res.Error, Err: fr.cause(rctx)}
	}
	return res, nil
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
		meta.PutValue(k, v)
	}
	meta.PutValue("runId", req.RunID)
	meta.PutValue("threadId", req.ThreadID)
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

// frame folds the chain's agent runs into the one AG-UI run the server
// frames: it drops their RUN_STARTED and keeps what their terminal events
// say (the error message an agent scrubbed, the run's details) for the
// frame's own terminal event. Events of sub-agents arrive already nested
// (SUBAGENT_*) and pass through.
type frame struct {
	out events.Sink

	mu       sync.Mutex
	meta     events.Meta
	lastErr  string
	lastCode string
	ends     []chainEnd
}

type chainEnd struct {
	msg types.RuleMsg
	err error
	rel string
}

// Emit implements events.Sink.
func (f *frame) Emit(e events.Event) {
	if e.SubagentRunID == "" {
		switch e.Type {
		case events.RunStarted:
			return
		case events.RunFinished:
			f.mu.Lock()
			f.meta = e.Meta
			f.mu.Unlock()
			return
		case events.RunError:
			f.mu.Lock()
			f.lastErr, f.lastCode = e.Message, e.Code
			f.mu.Unlock()
			return
		}
	}
	f.out.Emit(e)
}

// end is the chain's OnEnd callback: it fires once per branch end.
func (f *frame) end(_ types.RuleContext, m types.RuleMsg, err error, rel string) {
	if rel == types.Stream {
		return
	}
	f.mu.Lock()
	f.ends = append(f.ends, chainEnd{msg: m, err: err, rel: rel})
	f.mu.Unlock()
}

// finish decides how the run ended: cancelled when its context was
// cancelled; else a failure if any branch failed (the first); else the
// last successful branch's message.
func (f *frame) finish(ctx context.Context, res *RunResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ends) > 1 {
		for _, e := range f.ends {
			end := RunEnd{Msg: e.msg, Relation: e.rel}
			if e.err != nil {
				end.Error = e.err.Error()
			}
			res.Ends = append(res.Ends, end)
		}
	}
	var failed *chainEnd
	for i := range f.ends {
		if f.ends[i].err != nil || f.ends[i].rel == types.Failure {
			if failed == nil {
				failed = &f.ends[i]
			}
			continue
		}
		res.Msg, res.Relation = f.ends[i].msg, f.ends[i].rel
	}
	switch {
	case ctx.Err() != nil:
		res.Outcome, res.ErrorCode = OutcomeCancelled, agent.CodeCancelled
		res.Error = "the run was cancelled: " + context.Cause(ctx).Error()
		if failed != nil {
			res.Msg, res.Relation = failed.msg, types.Failure
		}
	case failed != nil:
		res.Outcome, res.Msg, res.Relation = OutcomeError, failed.msg, types.Failure
		res.Error, res.ErrorCode = f.failureText(failed)
	case len(f.ends) == 0:
		res.Outcome, res.ErrorCode = OutcomeError, "no_result"
		res.Error = "the chain ended without a result"
	default:
		res.Outcome = OutcomeSuccess
	}
}

// cause is the error behind a run that did not succeed.
func (f *frame) cause(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.ends {
		if e.err != nil {
			return e.err
		}
	}
	return nil
}

// failureText is a failed end's error: what an agent reported (already
// scrubbed of secrets) when there was one, else the chain's error.
func (f *frame) failureText(e *chainEnd) (string, string) {
	code := ""
	if e.msg.Metadata != nil {
		code = e.msg.Metadata.GetValue("errorCode")
	}
	if f.lastErr != "" {
		if e.msg.Metadata != nil {
			// RuleGo copied the unscrubbed error into errorMsg.
			e.msg.Metadata.PutValue("errorMsg", f.lastErr)
		}
		return f.lastErr, cmp.Or(code, f.lastCode)
	}
	msg := ""
	if e.err != nil {
		msg = e.err.Error()
	} else if e.msg.Metadata != nil {
		msg = e.msg.Metadata.GetValue("errorMsg")
	}
	if msg == "" {
		msg = "the chain ended in Failure"
	}
	return msg, cmp.Or(code, "chain_failure")
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// Result is the end of a chain run (see RunChain).
type Result struct {
	// Msg is the final message: the answer in its data, usage and run ids
	// in its metadata.
	Msg types.RuleMsg
	// Relation is Success or Failure.
	Relation string
}

// RunChain runs chain id once with input as message data (JSON when it
// looks like a JSON object) and metadata md, streaming the run's events to
// sink (which may be nil). It waits for the chain to end. A chain that ends
// in Failure returns its message with the error. md's runId and threadId,
// when given, name the run.
func (s *Store) RunChain(ctx context.Context, id string, input string, md map[string]string, sink events.Sink) (Result, error) {
	res, err := s.Run(ctx, RunRequest{ChainID: id, Input: input, Metadata: md, ThreadID: md["threadId"],
		RunID: md["runId"], Source: md["source"], Sink: sink})
	return Result{Msg: res.Msg, Relation: res.Relation}, err
}
