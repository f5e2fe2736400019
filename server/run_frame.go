package server

import (
	"cmp"
	"context"
	"sync"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
)

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
