package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/state/tasks"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// This file holds what a client's tasks/* request does to a task, on
// whichever replica it lands (mcp_tasks_http.go reads the request).

// find is the task id names, as caller p may see it: another user's task
// is as unknown as one that never existed.
func (m *mcpTasks) find(ctx context.Context, id string, p identity.Principal) (*tasks.Task, error) {
	t, err := m.store.Get(ctx, id)
	if errors.Is(err, tasks.ErrNotFound) || (err == nil && !identity.MayAct(p, t.Owner)) {
		return nil, &ProtocolError{Code: CodeInvalidParams, Message: fmt.Sprintf("unknown task %q (it never existed, expired, or is not yours)", id)}
	}
	if err != nil {
		return nil, &ProtocolError{Code: CodeInternal, Message: "reading the task: " + err.Error()}
	}
	return m.orphan(ctx, t), nil
}

// errReplicaGone fails a task whose replica stopped without ending it.
var errReplicaGone = &ProtocolError{Code: CodeInternal, Message: "the server running the task stopped before it ended (its heartbeat stopped); call the tool again"}

// orphan fails a task whose replica died (no heartbeat for m.dead) and
// returns it as it now is; any other task as it is.
func (m *mcpTasks) orphan(ctx context.Context, t *tasks.Task) *tasks.Task {
	// A task paused on a checkpoint runs nowhere, and has no heartbeat:
	// it is stale when its questions waited longer than their timeout
	// (its checkpoint has expired).
	stale := func(t *tasks.Task) bool {
		if t.Paused != "" {
			return t.Status == tasks.InputRequired && m.timeout > 0 && time.Since(t.Changed) > m.timeout
		}
		return !t.Status.Terminal() && time.Since(t.Alive) > m.dead
	}
	m.mu.Lock()
	_, here := m.live[t.ID]
	m.mu.Unlock()
	if here || !stale(t) {
		return t
	}
	got, err := m.store.Update(ctx, t.ID, func(t *tasks.Task) error {
		if !stale(t) {
			return errNotStale
		}
		why := errReplicaGone
		if t.Paused != "" {
			why = &ProtocolError{Code: CodeInternal, Message: errInputTimeout.Error()}
		}
		t.Status, t.Error, t.InputRequests, t.Paused, t.Changed = tasks.Failed, why.wire(), nil, "", time.Now()
		return nil
	})
	if err != nil && got == nil {
		return t
	}
	if errors.Is(err, errNotStale) {
		// Its replica came back meanwhile: read it again.
		if again, err := m.store.Get(ctx, t.ID); err == nil {
			return again
		}
		return t
	}
	return got
}

// errNotStale aborts the failing of a task whose heartbeat came back.
var errNotStale = errors.New("the task's replica is alive")

// cancel stops a task: it is cancelled in the store at once (a tasks/get
// on any replica sees it), and its run is stopped: here at once, or by the
// owner's watcher within taskPollInterval. Cancelling a task that ended
// changes nothing.
func (m *mcpTasks) cancel(ctx context.Context, id string, p identity.Principal) error {
	if _, err := m.find(ctx, id, p); err != nil {
		return err
	}
	_, err := m.store.Update(ctx, id, func(t *tasks.Task) error {
		t.Status, t.CancelRequested = tasks.Cancelled, true
		t.InputRequests, t.Responses = nil, nil
		t.Changed = time.Now()
		return nil
	})
	if err != nil && !errors.Is(err, tasks.ErrTerminal) {
		return &ProtocolError{Code: CodeInternal, Message: "cancelling the task: " + err.Error()}
	}
	if t, err := m.store.Get(ctx, id); err == nil && t.Paused != "" {
		// Its run paused: nobody will answer its checkpoint.
		m.tools.dropState(ctx, t.Paused)
	}
	m.mu.Lock()
	tr := m.live[id]
	m.mu.Unlock()
	if tr != nil {
		tr.run.cancel(errTaskCancelled)
	}
	return nil
}

// update delivers a client's answers to a task's questions: to the run
// when it is here, else through the store. Answers are checked against
// the questions first: a malformed one delivers none.
func (m *mcpTasks) update(ctx context.Context, id string, p identity.Principal, responses map[string]json.RawMessage) error {
	t, err := m.find(ctx, id, p)
	if err != nil {
		return err
	}
	if err := checkResponses(responses); err != nil {
		return &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}
	}
	m.mu.Lock()
	tr := m.live[id]
	m.mu.Unlock()
	if tr != nil {
		if err := tr.run.answer(responses); err != nil {
			return &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}
		}
		select {
		case tr.poke <- struct{}{}:
		default:
		}
		return nil
	}
	if t.Status.Terminal() {
		return nil
	}
	// Checked here against the questions the task shows, as the owner
	// would: a malformed answer is refused on every replica alike.
	if err := checkAnswers(t.InputRequests, responses); err != nil {
		return &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}
	}
	if t.Paused != "" {
		if all := answersSoFar(t, responses); all != nil {
			// The last answer: the run goes on here (mcp_tasks_pause.go).
			return m.resume(ctx, t, p, all)
		}
	}
	_, err = m.store.Update(ctx, id, func(t *tasks.Task) error {
		if t.Responses == nil {
			t.Responses = map[string]json.RawMessage{}
		}
		for k, v := range responses {
			t.Responses[k] = v
		}
		if t.Paused != "" {
			// No run takes them: the task shows the questions left.
			t.InputRequests = withoutAnswered(t.InputRequests, t.Responses)
		}
		return nil
	})
	if err != nil && !errors.Is(err, tasks.ErrTerminal) {
		return &ProtocolError{Code: CodeInternal, Message: "storing the answers: " + err.Error()}
	}
	return nil
}

// checkAnswers checks answers against a task's stored inputRequests (key
// -> {method, params: {message, requestedSchema}}), as chainRun.answer
// checks them against its open questions; keys that name no question are
// ignored.
func checkAnswers(inputRequests json.RawMessage, responses map[string]json.RawMessage) error {
	var reqs map[string]struct {
		Params struct {
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
		} `json:"params"`
	}
	if len(inputRequests) > 0 {
		if err := json.Unmarshal(inputRequests, &reqs); err != nil {
			return fmt.Errorf("the task's questions: %w", err)
		}
	}
	for k, raw := range responses {
		req, ok := reqs[k]
		if !ok {
			continue
		}
		if _, err := decodeAnswer(raw, ask.Question{Message: req.Params.Message, Schema: req.Params.RequestedSchema}); err != nil {
			return fmt.Errorf("inputResponses[%q]: %w", k, err)
		}
	}
	return nil
}

// answersSoFar are the answers paused task t has with responses, when
// they answer every one of its questions (nil otherwise).
func answersSoFar(t *tasks.Task, responses map[string]json.RawMessage) map[string]json.RawMessage {
	var reqs map[string]json.RawMessage
	if json.Unmarshal(t.InputRequests, &reqs) != nil {
		return nil
	}
	for k := range reqs {
		if _, ok := responses[k]; !ok {
			if _, ok := t.Responses[k]; !ok {
				return nil
			}
		}
	}
	all := make(map[string]json.RawMessage, len(reqs)+len(t.Responses))
	for k, raw := range t.Responses {
		all[k] = raw
	}
	for k, raw := range responses {
		all[k] = raw
	}
	return all
}

// withoutAnswered are inputRequests less the questions answers answer.
func withoutAnswered(inputRequests json.RawMessage, answers map[string]json.RawMessage) json.RawMessage {
	var reqs map[string]json.RawMessage
	if json.Unmarshal(inputRequests, &reqs) != nil {
		return inputRequests
	}
	for k := range answers {
		delete(reqs, k)
	}
	raw, err := json.Marshal(reqs)
	if err != nil {
		return inputRequests
	}
	return raw
}
