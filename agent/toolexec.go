package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// CallState is one of the agent's own calls of a turn and what became of
// it: its result (a tool message), or what it waits for (Paused), or
// neither (a sequential turn paused at an earlier call: it has not
// started).
type CallState struct {
	Call events.ToolCall `json:"call"`
	// Announced: TOOL_CALL_START, ARGS and END went out while the model
	// streamed the call.
	Announced bool `json:"announced,omitempty"`
	// Withdrawn: a BeforeLLM aspect took the tool out of the turn.
	Withdrawn bool            `json:"withdrawn,omitempty"`
	Result    *events.Message `json:"result,omitempty"`
	Paused    *tools.Paused   `json:"paused,omitempty"`
}

// newCalls are the states of a turn's own calls, none made yet.
func (r *run) newCalls(t *turnResult) []CallState {
	calls := make([]CallState, len(t.ToolCalls))
	for i, tc := range t.ToolCalls {
		calls[i] = CallState{Call: tc, Announced: slices.Contains(t.streamed, tc.ID), Withdrawn: slices.Contains(t.withdrawn, tc.Name)}
	}
	return calls
}

// callTools makes the turn's calls that have no result yet through the
// wrapper (or resumes those that waited), concurrently when configured and
// there are several, and records in each its result, or what it waits
// for. Results are emitted as each call completes. A sequential turn stops
// at a call that waits: the calls after it start when it has its answer.
func (r *run) callTools(ctx context.Context, messageID string, calls []CallState) {
	cfg := &r.agent.cfg
	call := func(i int) {
		c := &calls[i]
		tc := c.Call
		var out tools.Outcome
		defer func() {
			// The wrapper recovers tool panics; this catches a panicking
			// aspect, which must not take the process down either.
			if v := recover(); v != nil {
				slog.Error("tool call panicked", "tool", tc.Name, "panic", v, "stack", string(debug.Stack()))
				out = tools.Outcome{Content: fmt.Sprintf("Error (execution_failed): internal error: %v", v), IsError: true, Kind: "execution_failed"}
			}
			c.Result, c.Paused = toolMessage(tc.ID, &out), out.Paused
		}()
		wc := tools.Call{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Arguments), ParentMessageID: messageID,
			Announced: c.Announced || c.Paused != nil, Withdrawn: c.Withdrawn}
		if c.Paused != nil {
			out = cfg.Tools.Resume(ctx, r.tools, wc, *c.Paused)
		} else {
			out = cfg.Tools.Invoke(ctx, r.tools, wc)
		}
		if out.Paused == nil {
			// A call that waits is recorded when it has its outcome.
			r.recordTool(tc.ID, tc.Name, &out)
		}
	}
	var todo []int
	for i := range calls {
		if calls[i].Result == nil {
			todo = append(todo, i)
		}
	}
	if !cfg.ParallelToolCalls || len(todo) == 1 {
		for _, i := range todo {
			if call(i); calls[i].Paused != nil {
				break
			}
		}
		return
	}
	sem := make(chan struct{}, cfg.MaxParallel)
	var wg sync.WaitGroup
	for _, i := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			call(i)
		}()
	}
	wg.Wait()
}

// toolMessage is the tool message of a call's outcome (nil while the call
// waits).
func toolMessage(id string, o *tools.Outcome) *events.Message {
	if o.Paused != nil {
		return nil
	}
	m := &events.Message{Role: events.RoleTool, ToolCallID: id, Content: o.Content}
	if o.IsError {
		m.Error = o.Kind
		if m.Error == "" {
			m.Error = "error"
		}
	}
	return m
}
