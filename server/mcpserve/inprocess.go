package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// Call calls tool name as a tools/call described by call would (its
// arguments, requestState and inputResponses, what its client declared),
// without a transport: for a client in the same process, such as an
// embedder's or a test's. The caller is ctx's identity (identity.With).
// A call with a nil Peer gets no progress and cannot be asked with a
// 2025-11-25 elicitation.
func (s *Service) Call(ctx context.Context, name string, call ToolCall) ToolOutcome {
	id, ok := s.mcpTools.chainOf(name)
	if !ok {
		return ToolOutcome{Err: &ProtocolError{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}}
	}
	if call.Args == nil {
		call.Args = json.RawMessage(`{}`)
	}
	return s.mcpTools.call(ctx, id, call)
}

// Task is task id as caller p sees it (another caller's task is unknown,
// -32602, as one that never existed).
func (s *Service) Task(ctx context.Context, id string, p identity.Principal) (*tasks.Task, error) {
	return s.mcpTools.tasks.find(ctx, id, p)
}

// UpdateTask answers questions of task id (tasks/update).
func (s *Service) UpdateTask(ctx context.Context, id string, p identity.Principal, answers map[string]json.RawMessage) error {
	return s.mcpTools.tasks.update(ctx, id, p, answers)
}

// CancelTask cancels task id (tasks/cancel).
func (s *Service) CancelTask(ctx context.Context, id string, p identity.Principal) error {
	return s.mcpTools.tasks.cancel(ctx, id, p)
}

// Stats are what the service holds in this process now.
type Stats struct {
	// WaitingRuns are runs waiting in this process for a client's answer
	// (a 2025-11-25 elicitation, a remote tool's question).
	WaitingRuns int
	// RunningTasks are tasks whose run is in this process.
	RunningTasks int
}

// Stats tells what the service holds in this process now.
func (s *Service) Stats() Stats {
	w := s.mcpTools.waiting
	w.mu.Lock()
	waiting := len(w.runs)
	w.mu.Unlock()
	m := s.mcpTools.tasks
	m.mu.Lock()
	running := len(m.live)
	m.mu.Unlock()
	return Stats{WaitingRuns: waiting, RunningTasks: running}
}

// SetTaskListenPoll sets how often a task listen stream reads its tasks
// from the store besides hearing of their changes (1 s by default): a
// replica misses no change that its store's notifications dropped for
// longer than that.
func (s *Service) SetTaskListenPoll(d time.Duration) {
	s.mcpTools.tasks.listeners.poll.Store(int64(d))
}
