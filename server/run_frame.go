package server

import (
	"cmp"
	"errors"
	"sync"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools/ask"
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

// finish decides how the run ended, from its ends (in the order of the
// end nodes in the chain definition): cancelled when its context was
// cancelled; else a failure if any end failed (the first); else the last
// successful end's message.
func (f *frame) finish(run *components.ChainRun, ends []components.ChainEnd, res *RunResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(ends) > 1 {
		for _, e := range ends {
			end := RunEnd{Msg: e.Msg, Relation: e.Relation}
			if e.Err != nil {
				end.Error = e.Err.Error()
			}
			res.Ends = append(res.Ends, end)
		}
	}
	var failed *components.ChainEnd
	asked := false
	for i := range ends {
		if errors.Is(ends[i].Err, ask.ErrPending) {
			// Not a failure: the node's question waits for its answer.
			asked = true
			continue
		}
		if ends[i].Failed() {
			if failed == nil {
				failed = &ends[i]
			}
			continue
		}
		res.Msg, res.Relation = ends[i].Msg, ends[i].Relation
	}
	cancelled, cause := run.Cancelled()
	switch {
	case cancelled && cause != nil:
		res.Outcome, res.ErrorCode = OutcomeCancelled, agent.CodeCancelled
		res.Error = "the run was cancelled: " + cause.Error()
		if failed != nil {
			res.Msg, res.Relation = failed.Msg, types.Failure
		}
	case failed != nil:
		res.Outcome, res.Msg, res.Relation = OutcomeError, failed.Msg, types.Failure
		res.Error, res.ErrorCode = f.failureText(failed)
	case asked:
		// Paused for input (RunResult.Asked): the run goes on once its
		// questions are answered.
		res.Outcome = OutcomeInterrupt
	case len(ends) == 0:
		res.Outcome, res.ErrorCode = OutcomeError, "no_result"
		res.Error = "the chain ended without a result"
	default:
		res.Outcome = OutcomeSuccess
	}
}

// cause is the error behind a run that did not succeed.
func (f *frame) cause(run *components.ChainRun, ends []components.ChainEnd) error {
	if cancelled, cause := run.Cancelled(); cancelled && cause != nil {
		return cause
	}
	for _, e := range ends {
		if e.Err != nil {
			return e.Err
		}
	}
	return nil
}

// failureText is a failed end's error: what an agent reported (already
// scrubbed of secrets) when there was one, else the chain's error.
func (f *frame) failureText(e *components.ChainEnd) (string, string) {
	code := ""
	if e.Msg.Metadata != nil {
		code = e.Msg.Metadata.GetValue("errorCode")
	}
	if f.lastErr != "" {
		if e.Msg.Metadata != nil {
			// RuleGo copied the unscrubbed error into errorMsg.
			e.Msg.Metadata.PutValue("errorMsg", f.lastErr)
		}
		return f.lastErr, cmp.Or(code, f.lastCode)
	}
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	} else if e.Msg.Metadata != nil {
		msg = e.Msg.Metadata.GetValue("errorMsg")
	}
	if msg == "" {
		msg = "the chain ended in Failure"
	}
	return msg, cmp.Or(code, "chain_failure")
}
