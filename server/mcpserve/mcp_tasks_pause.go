package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/tasks"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// A task whose chain nodes ask pauses as a checkpoint too (see
// mcp_input_pause.go): its run ends, the task is input_required with the
// questions and names the checkpoint (tasks.Task.Paused), and no replica
// runs it, so none heartbeats it. The tasks/update that brings the last
// answer, on whichever replica it lands, claims the checkpoint and goes
// on with the run there, as that replica's task.

// pause saves the run of task tr, which ended with nodes that asked, as a
// checkpoint, and makes the task input_required. It reports false when
// the task must end instead (tr.run.err then says why).
func (m *mcpTasks) pause(ctx context.Context, tr *taskRun) bool {
	r := tr.run
	var qs []ask.Question
	var state string
	if len(r.interrupts) > 0 {
		// An agent's approvals or forms: the run is paused already
		// (mcp_interrupt_pause.go).
		for _, in := range r.interrupts {
			qs = append(qs, interruptQuestion(in))
		}
		state = interruptState(r.storeRun, r.interrupts)
		if !tr.canElicit {
			m.tools.dropState(ctx, state)
			r.err = missingElicitation(qs)
			return false
		}
	} else {
		if !tr.canElicit {
			qs, _ = askedQuestions(r.asked)
			r.err = missingElicitation(qs)
			return false
		}
		var err error
		if qs, state, err = m.tools.pauseRun(ctx, r); err != nil {
			r.err = &ProtocolError{Code: CodeInternal, Message: m.tools.secrets(r.chain).Scrub(err.Error())}
			return false
		}
	}
	raw, err := inputRequests(qs)
	if err != nil {
		r.err = &ProtocolError{Code: CodeInternal, Message: err.Error()}
		m.tools.dropState(ctx, state)
		return false
	}
	// Not this replica's any more: an answer goes through the store.
	m.mu.Lock()
	delete(m.live, tr.id)
	m.mu.Unlock()
	_, err = m.store.Update(ctx, tr.id, func(t *tasks.Task) error {
		t.Status, t.InputRequests, t.Paused, t.Responses = tasks.InputRequired, raw, state, nil
		t.Changed = time.Now()
		return nil
	})
	if err != nil {
		// Cancelled meanwhile (or the store failed: the task stays as it
		// was until it expires): nobody will answer the checkpoint.
		m.tools.dropState(ctx, state)
	}
	return true
}

// resume goes on with paused task t, whose questions answers (keyed as the
// task shows them) all answer: it claims the run's checkpoint for caller
// p and runs it here, as this replica's task.
func (m *mcpTasks) resume(ctx context.Context, t *tasks.Task, p identity.Principal, answers map[string]json.RawMessage) error {
	chain, ok := m.tools.chainOf(t.Tool)
	if !ok {
		return &ProtocolError{Code: CodeInvalidParams, Message: "the task's tool " + t.Tool + " is no longer deployed"}
	}
	if why := m.full(); why != "" {
		return &ProtocolError{Code: CodeInternal, Message: why}
	}
	if m.tools.store.Draining() {
		// Not claimed: another replica goes on with the run.
		return &ProtocolError{Code: CodeInternal, Message: runs.ErrDraining.Error()}
	}
	call := ToolCall{Modern: true, CanElicit: true, Tasks: true}
	var from runResume
	var err error
	if strings.HasPrefix(t.Paused, interruptStatePrefix) {
		from.interrupted, err = m.tools.claimInterrupts(ctx, t.Paused, chain, p, answers)
	} else {
		from.pause, call.Responses, err = m.tools.claimPause(ctx, t.Paused, chain, p, answers)
	}
	if err != nil {
		if errors.Is(err, errPauseGone) {
			return &ProtocolError{Code: CodeInvalidParams, Message: "the task's questions were answered already, or waited longer than their input timeout"}
		}
		return &ProtocolError{Code: CodeInvalidParams, Message: err.Error()}
	}
	run, err := m.tools.startRun(ctx, chain, "", call, true, from)
	if err != nil {
		return &ProtocolError{Code: CodeInternal, Message: err.Error()}
	}
	tr := &taskRun{id: t.ID, run: run, canElicit: true, poke: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		run.cancel(ErrServerClosed)
		<-run.done
		return &ProtocolError{Code: CodeInternal, Message: ErrServerClosed.Error()}
	}
	m.live[t.ID] = tr
	m.wg.Add(1)
	m.mu.Unlock()
	_, err = m.store.Update(ctx, t.ID, func(t *tasks.Task) error {
		now := time.Now()
		t.Status, t.InputRequests, t.Paused, t.Responses = tasks.Working, nil, "", nil
		t.Replica, t.Alive, t.Changed = m.replica, now, now
		return nil
	})
	if err != nil {
		// Cancelled meanwhile: so is its run.
		run.cancel(errTaskCancelled)
	}
	go m.watch(tr)
	return nil
}
