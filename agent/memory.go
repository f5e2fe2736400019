package agent

import (
	"context"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
)

// Memory is a conversation that outlives one run (package sessions
// implements it). A run with a Memory calls Recall once RUN_STARTED is out,
// and runs on the conversation it returns instead of Input.Messages; when
// the run succeeds it calls Keep with the messages the run added, before
// its terminal event, so that a client starting the next run at once finds
// them stored. A failed or cancelled run keeps nothing.
//
// Both get the run's LLM client (compaction and summaries use it) and emit,
// which writes events into the run's stream in order.
type Memory interface {
	Recall(ctx context.Context, llm *Client, emit func(events.Event)) ([]events.Message, error)
	Keep(ctx context.Context, added []events.Message, llm *Client, emit func(events.Event)) error
}

// CodeSession is the run error code of a session that could not be read or
// written.
const CodeSession = "session_error"

// llm is the client the run talks to: the input's (a session's model) or
// the agent's own.
func (r *run) llm() *Client {
	if r.in.LLM != nil {
		return r.in.LLM
	}
	return r.agent.cfg.LLM
}

// recall replaces the run's messages with the conversation its Memory
// continues.
func (r *run) recall(ctx context.Context) error {
	if r.in.Memory == nil {
		return nil
	}
	msgs, err := r.memory(ctx, MemoryRecall, func(emit func(events.Event)) ([]events.Message, error) {
		return r.in.Memory.Recall(ctx, r.llm(), emit)
	})
	if err != nil {
		return &RunError{Code: CodeSession, Err: err}
	}
	r.in.Messages = msgs
	return nil
}

// keep hands the messages the run added to its Memory. An Around aspect
// that answered without the loop leaves no messages: its answer is kept
// as one assistant message.
func (r *run) keep(ctx context.Context, out *aspects.RunOutput) error {
	if r.in.Memory == nil {
		return nil
	}
	added := out.Messages
	if len(added) == 0 {
		added = []events.Message{{ID: r.in.RunID + "-msg-0", Role: events.RoleAssistant, Content: out.Content}}
	}
	_, err := r.memory(ctx, MemoryKeep, func(emit func(events.Event)) ([]events.Message, error) {
		return nil, r.in.Memory.Keep(ctx, added, r.llm(), emit)
	})
	if err != nil {
		return &RunError{Code: CodeSession, Err: err}
	}
	return nil
}
