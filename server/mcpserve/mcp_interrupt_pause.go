package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// The approvals and forms of an agent served over MCP to a 2026-07-28
// client (a call or a task) pause its run as the run route's do: the run
// is interruptible, a call that needs a person raises an interrupt, the
// agent suspends, and the run is a checkpoint.State in the store's
// checkpoint store (pause.go), with the interrupts' expiry (an interrupt
// nobody answers in time is a denial, and the run goes on without its
// client). The call answers input_required with a question per interrupt
// and a requestState naming the run and its open interrupts, whose ids
// are unguessable (a task keeps it as tasks.Task.Paused). The retry, or
// the tasks/update with the last answer, on any replica, turns the
// answers into resume entries, claims the checkpoint (Store.claim: one
// claimant wins) and goes on with the run (Store.goOn).

// interruptStatePrefix starts the requestState of an interrupted run.
const interruptStatePrefix = "i."

// interruptQuestion is the question an interrupt puts to the MCP client,
// as mcpApprover asks it.
func interruptQuestion(in events.Interrupt) ask.Question {
	if in.Reason == "form" {
		return ask.Question{ID: "form_" + in.ToolCallID, Message: in.Message, Schema: in.ResponseSchema}
	}
	return ask.Question{ID: "approve_" + in.ToolCallID, Message: in.Message, Schema: approveSchema}
}

// interruptState is the requestState of run runID waiting for interrupts.
func interruptState(runID string, interrupts []events.Interrupt) string {
	ids := make([]string, len(interrupts))
	for i, in := range interrupts {
		ids[i] = in.ID
	}
	slices.Sort(ids)
	return interruptStatePrefix + base64.RawURLEncoding.EncodeToString([]byte(runID)) + "." +
		base64.RawURLEncoding.EncodeToString([]byte(strings.Join(ids, " ")))
}

// claimInterrupts checks a retry's requestState, caller and answers against
// the paused run it names, and claims it: the caller goes on with the run
// (Store.goOn), and nobody else can. Nothing is claimed when anything is
// refused.
func (c *chainTools) claimInterrupts(ctx context.Context, state, chain string, p identity.Principal,
	responses map[string]json.RawMessage) (Claimed, error) {
	encRun, encIDs, ok := strings.Cut(strings.TrimPrefix(state, interruptStatePrefix), ".")
	runID, err1 := base64.RawURLEncoding.DecodeString(encRun)
	ids, err2 := base64.RawURLEncoding.DecodeString(encIDs)
	if !ok || err1 != nil || err2 != nil || len(runID) == 0 {
		return nil, errTamperedState
	}
	_, paused, err := c.store.Paused(ctx, string(runID))
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, errPauseGone
	case err != nil:
		return nil, err
	}
	var open []string
	for _, pd := range paused.Pending {
		if paused.Open(pd.Interrupt.ID) != nil {
			open = append(open, pd.Interrupt.ID)
		}
	}
	slices.Sort(open)
	switch {
	case strings.Join(open, " ") != string(ids):
		return nil, errors.New("this requestState was altered, or was already answered: retry with the latest one, exactly as it was received")
	case paused.ChainID != chain || paused.Source != "mcp":
		return nil, errors.New("requestState belongs to a call of another tool")
	case !identity.MayAct(p, paused.Owner):
		return nil, fmt.Errorf("%w: this requestState belongs to another caller's call", runs.ErrNotYours)
	}
	var entries []InterruptAnswer
	var missing []string
	for _, pd := range paused.Pending {
		if paused.Open(pd.Interrupt.ID) == nil {
			continue
		}
		q := interruptQuestion(pd.Interrupt)
		raw, ok := responses[q.Key()]
		if !ok {
			missing = append(missing, q.Key())
			continue
		}
		a, err := decodeAnswer(raw, q)
		if err != nil {
			return nil, fmt.Errorf("inputResponses[%q]: %w", q.Key(), err)
		}
		entries = append(entries, mcpResumeEntry(pd.Interrupt, a))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("inputResponses must answer every question of the requestState; missing %s", strings.Join(missing, ", "))
	}
	r, err := c.store.Claim(ctx, string(runID), entries)
	if err != nil {
		return nil, fmt.Errorf("the run cannot go on: %w", err)
	}
	return r, nil
}

// mcpResumeEntry is the MCP client's answer to an interrupt as the resume
// entry that answers it.
func mcpResumeEntry(in events.Interrupt, a ask.Answer) InterruptAnswer {
	e := InterruptAnswer{InterruptID: in.ID, Status: "resolved"}
	if in.Reason == "form" {
		if a.Action != ask.Accept {
			e.Status = "cancelled"
			return e
		}
		e.Payload = a.Content
		return e
	}
	pl := map[string]any{"approved": a.Action == ask.Accept}
	switch a.Action {
	case ask.Accept:
		var note struct {
			Reason string `json:"reason"`
		}
		if len(a.Content) > 0 {
			_ = json.Unmarshal(a.Content, &note)
		}
		pl["reason"] = note.Reason
	case ask.Decline:
		pl["reason"] = "the MCP client's user declined"
	default:
		pl["reason"] = "the MCP client's user dismissed the question"
	}
	e.Payload, _ = json.Marshal(pl)
	return e
}

// dropInterrupted cancels a paused run nobody can answer (its client
// cannot be asked).
func (c *chainTools) dropInterrupted(ctx context.Context, runID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if cp, _, err := c.store.Paused(ctx, runID); err == nil {
		_ = c.store.DropPaused(ctx, cp)
	}
}

// dropState drops the paused run a requestState names (an input pause or
// an interrupted run), if it is still there: nobody will answer it.
func (c *chainTools) dropState(ctx context.Context, state string) {
	if !strings.HasPrefix(state, interruptStatePrefix) {
		c.dropPause(ctx, state)
		return
	}
	enc, _, _ := strings.Cut(strings.TrimPrefix(state, interruptStatePrefix), ".")
	if runID, err := base64.RawURLEncoding.DecodeString(enc); err == nil && len(runID) > 0 {
		c.dropInterrupted(ctx, string(runID))
	}
}
