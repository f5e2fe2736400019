package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/ruleagent/ruleagent/tools"
)

// callTools runs the turn's tool calls through the wrapper, concurrently
// when configured and there are several, and returns their outcomes in
// call order. Results are emitted as each call completes.
func (r *run) callTools(ctx context.Context, t *turnResult) []tools.Outcome {
	cfg := &r.agent.cfg
	out := make([]tools.Outcome, len(t.ToolCalls))
	call := func(i int) {
		tc := t.ToolCalls[i]
		defer func() {
			// The wrapper recovers tool panics; this catches a panicking
			// aspect, which must not take the process down either.
			if v := recover(); v != nil {
				slog.Error("tool call panicked", "tool", tc.Name, "panic", v, "stack", string(debug.Stack()))
				out[i] = tools.Outcome{Content: fmt.Sprintf("Error (execution_failed): internal error: %v", v), IsError: true, Kind: "execution_failed"}
			}
		}()
		out[i] = cfg.Tools.Invoke(ctx, r.tools, tools.Call{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Arguments),
			ParentMessageID: t.messageID, Announced: slices.Contains(t.streamed, tc.ID), Withdrawn: slices.Contains(t.withdrawn, tc.Name)})
		r.recordTool(tc.ID, tc.Name, &out[i])
	}
	if !cfg.ParallelToolCalls || len(t.ToolCalls) == 1 {
		for i := range t.ToolCalls {
			call(i)
		}
		return out
	}
	sem := make(chan struct{}, cfg.MaxParallel)
	var wg sync.WaitGroup
	for i := range t.ToolCalls {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			call(i)
		}()
	}
	wg.Wait()
	return out
}
