package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// forkPlan is where a fork goes live and what it changes there.
type forkPlan struct {
	// agent is the agent run (a record's key) and step its LLM turn from
	// which the fork runs live.
	agent string
	step  int
	// systemPrompt and messages edit the conversation that turn sends;
	// toolResults replace the recorded results of the agent's earlier
	// tool calls (by call id); model answers from the turn on.
	systemPrompt *string
	messages     []MessageEdit
	toolResults  map[string]string
	model        string

	mu      sync.Mutex
	clients map[*agent.Client]*agent.Client
}

// MessageEdit replaces the content of message Index of a fork's turn.
type MessageEdit struct {
	Index   int    `json:"index"`
	Content string `json:"content"`
}

// ToolResultEdit replaces the result of an earlier tool call of a fork's
// agent run.
type ToolResultEdit struct {
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
}

// apply edits the conversation of the fork's turn, in place: the loop
// keeps the edited messages for the turns after.
func (f *forkPlan) apply(conv []events.Message) {
	if f.systemPrompt != nil && len(conv) > 0 && conv[0].Role == events.RoleSystem {
		conv[0].Content = *f.systemPrompt
	}
	for _, e := range f.messages {
		if e.Index >= 0 && e.Index < len(conv) {
			conv[e.Index].Content, conv[e.Index].Parts = e.Content, nil
		}
	}
}

// client is the client that answers the fork's turns: llm, or llm asking
// for the fork's model.
func (f *forkPlan) client(llm *agent.Client) (*agent.Client, error) {
	if f.model == "" || f.model == llm.Model() {
		return llm, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[llm]; ok {
		return c, nil
	}
	c, err := llm.WithModel(f.model)
	if err != nil {
		return nil, err
	}
	if f.clients == nil {
		f.clients = map[*agent.Client]*agent.Client{}
	}
	f.clients[llm] = c
	return c, nil
}

// toolResult is the edited result of the fork agent's call id, if any.
func (f *forkPlan) toolResult(key, id string) (string, bool) {
	if f == nil || key != f.agent {
		return "", false
	}
	text, ok := f.toolResults[id]
	return text, ok
}

// ErrFork refuses a fork that does not fit the record: an unknown agent
// run or step, an edit of a message or tool result its turn does not have.
var ErrFork = errors.New("cannot fork")

// ForkRequest is where a fork starts and what it changes.
type ForkRequest struct {
	// Step is the LLM turn (from 1) of the agent run from which the fork
	// runs live; Agent that run (a key of the record's agents; default
	// the first agent of the run's own chain).
	Step  int    `json:"step"`
	Agent string `json:"agent,omitempty"`
	Edits struct {
		// SystemPrompt replaces the turn's system message.
		SystemPrompt *string `json:"systemPrompt,omitempty"`
		// Messages replace the content of messages of the turn's request
		// (by index, the system message being 0).
		Messages []MessageEdit `json:"messages,omitempty"`
		// ToolResults replace the results of the agent's tool calls made
		// before the turn.
		ToolResults []ToolResultEdit `json:"toolResults,omitempty"`
	} `json:"edits"`
	// Model, when set, answers the fork's live turns (the agent's primary
	// endpoint, another model).
	Model string `json:"model,omitempty"`
}

// Fork starts a new run of a recorded run: its turns before fr.Step are
// the recorded run's, answered from the record (its tool calls too), with
// fr's edits applied; from fr.Step on the fork runs live, with real LLM
// calls (fr.Model's, when set) and real tool calls. It is recorded as a
// run of its own, linked to the original (Meta.ForkedFrom). req gives its
// sink, owner and run id (empty: a new one); the fork returns like Run.
func (s *Store) Fork(ctx context.Context, rec *runrecord.Record, fr ForkRequest, req RunRequest) (RunResult, error) {
	if rec.Incomplete != "" {
		return RunResult{}, fmt.Errorf("%w: its record is incomplete: %s", ErrNotReplayable, rec.Incomplete)
	}
	plan, err := planFork(rec, &fr)
	if err != nil {
		return RunResult{}, err
	}
	base, err := recordedRequest(rec, SourceFork, req.Owner)
	if err != nil {
		return RunResult{}, err
	}
	base.Sink, base.ParentRunID = req.Sink, rec.Meta.RunID
	if req.RunID != "" {
		base.RunID = req.RunID
	}
	p := newPlayback(rec)
	p.fork = plan
	res, err := s.play(ctx, rec, p, base)
	if res.RunID == "" {
		res.RunID, res.ThreadID = base.RunID, base.ThreadID
	}
	return res, err
}

// planFork checks a fork request against the record.
func planFork(rec *runrecord.Record, fr *ForkRequest) (*forkPlan, error) {
	key := fr.Agent
	if key == "" {
		for _, a := range rec.Agents {
			if a.Parent == "" {
				key = a.Key
				break
			}
		}
	}
	// The first attempt of each of the agent's turns.
	turns := map[int]*runrecord.LLMCall{}
	last := 0
	for i := range rec.LLMCalls {
		c := &rec.LLMCalls[i]
		if c.Agent == key && c.Step > 0 && turns[c.Step] == nil {
			turns[c.Step] = c
			last = max(last, c.Step)
		}
	}
	if key == "" || last == 0 {
		return nil, fmt.Errorf("%w: the run has no agent run %q with LLM turns", ErrFork, fr.Agent)
	}
	turn := turns[fr.Step]
	if turn == nil {
		return nil, fmt.Errorf("%w: step %d: the agent run %s made turns 1 to %d", ErrFork, fr.Step, key, last)
	}
	msgs := make([]struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
	}, len(turn.Request.Messages))
	for i, m := range turn.Request.Messages {
		if m >= 0 && m < len(rec.Messages) {
			_ = json.Unmarshal(rec.Messages[m], &msgs[i])
		}
	}
	e := &fr.Edits
	if e.SystemPrompt != nil && (len(msgs) == 0 || msgs[0].Role != string(events.RoleSystem)) {
		return nil, fmt.Errorf("%w: edits.systemPrompt: turn %d sends no system message", ErrFork, fr.Step)
	}
	for i, m := range e.Messages {
		if m.Index < 0 || m.Index >= len(msgs) {
			return nil, fmt.Errorf("%w: edits.messages[%d].index: %d is not a message of turn %d (0 to %d)", ErrFork, i, m.Index, fr.Step, len(msgs)-1)
		}
	}
	plan := &forkPlan{agent: key, step: fr.Step, systemPrompt: e.SystemPrompt, messages: e.Messages,
		toolResults: map[string]string{}, model: fr.Model}
	for i, t := range e.ToolResults {
		at := slices.IndexFunc(msgs, func(m struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		}) bool {
			return m.Role == string(events.RoleTool) && m.ToolCallID == t.ToolCallID
		})
		if at < 0 {
			return nil, fmt.Errorf("%w: edits.toolResults[%d].toolCallId: turn %d reads no result of a call %q", ErrFork, i, fr.Step, t.ToolCallID)
		}
		plan.toolResults[t.ToolCallID] = t.Content
		// The turn reads the edit even where the record has no result to
		// replace (a call a policy refused).
		plan.messages = append(plan.messages, MessageEdit{Index: at, Content: t.Content})
	}
	return plan, nil
}
