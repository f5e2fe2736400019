package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/tools"
)

// answer is a person's reply to an interrupt.
type answer struct {
	decision tools.ApprovalDecision
	always   bool
}

// approvalSchema is the answer an approval interrupt expects (payload).
var approvalSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"approved":{"type":"boolean","description":"Run the call (true) or refuse it (false)."},` +
	`"reason":{"type":"string","description":"Why it was refused: the model reads it."},` +
	`"arguments":{"type":"object","description":"Run it with these arguments instead of the model's."},` +
	`"always":{"type":"boolean","description":"Approve this exact call (the same commands with the same redirects, variables and directories, or the same tool with the same arguments) for the rest of the thread."}` +
	`},"required":["approved"]}`)

// interruptIndex remembers the calls a person approved for good, per
// thread of one caller. (Which run an interrupt belongs to, its id says:
// see interruptID.)
type interruptIndex struct {
	mu     sync.Mutex
	always *approvalMemory
}

// memory is the "always" approvals, made on first use.
func (x *interruptIndex) memory() *approvalMemory {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.always == nil {
		x.always = newApprovalMemory(alwaysPerThread, alwaysThreads, alwaysTTL, time.Now)
	}
	return x.always
}

// alwaysScope is where a run's "always" approvals hold: its thread, for
// the caller who started it (another caller naming the same thread id
// does not inherit them).
func (st *runState) alwaysScope() string {
	return st.req.Owner + "\x00" + st.req.ThreadID
}

// callKey is what approving a call "always" approves: a shell call's exact
// parsed commands with every redirect, variable assignment and directory
// of the call, or the tool with its exact arguments.
func callKey(req tools.ApprovalRequest) string {
	if len(req.Commands) > 0 || len(req.WorkDirs) > 0 {
		parts := []string{req.Tool, "commands", strings.Join(req.Commands, "\x00"), "redirects", strings.Join(req.Redirects, "\x00"),
			"assignments", strings.Join(req.Assignments, "\x00"), "dirs", strings.Join(req.WorkDirs, "\x00")}
		return strings.Join(parts, "\x01")
	}
	var compact bytes.Buffer
	if json.Compact(&compact, req.Args) != nil {
		compact.Write(req.Args)
	}
	return req.Tool + "\x00" + compact.String()
}

// Approve implements tools.Approver. A call that needs a person raises an
// interrupt and pauses (*tools.PauseError): the run goes on suspending,
// and when it has ended, it is saved as a checkpoint (see pause). A call
// of a resumed run names the interrupt it paused on, and the answers the
// resume brought decide it; one that nobody answered yet (another
// interrupt of the run expired first) pauses again on the same interrupt.
func (st *runState) Approve(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	key := callKey(req)
	if req.InterruptID != "" {
		if a, ok := st.answers[req.InterruptID]; ok {
			// "Always" approves the call the person saw; edited arguments
			// are approved this once.
			if a.always && a.decision.Approved && len(req.ResponseSchema) == 0 && (len(a.decision.Args) == 0 || bytes.Equal(a.decision.Args, req.Args)) {
				st.s.interrupts.memory().allow(st.alwaysScope(), key)
			}
			return a.decision, nil
		}
		var p *checkpoint.Pending
		if st.resumed != nil {
			p = st.resumed.Find(req.InterruptID)
		}
		if p == nil {
			return tools.ApprovalDecision{}, fmt.Errorf("interrupt %s is not one this run waits for", req.InterruptID)
		}
		st.raise(*p)
		return tools.ApprovalDecision{}, &tools.PauseError{InterruptID: p.Interrupt.ID}
	}
	if len(req.ResponseSchema) == 0 && st.s.interrupts.memory().allowed(st.alwaysScope(), key) {
		return tools.ApprovalDecision{Approved: true, Remembered: true}, nil
	}
	p := st.newInterrupt(req, key)
	st.raise(p)
	return tools.ApprovalDecision{}, &tools.PauseError{InterruptID: p.Interrupt.ID}
}

// raise records an interrupt the run's pause will wait for.
func (st *runState) raise(p checkpoint.Pending) {
	st.mu.Lock()
	st.raised = append(st.raised, p)
	st.mu.Unlock()
}

// newInterrupt is the interrupt of a call that needs a person.
func (st *runState) newInterrupt(req tools.ApprovalRequest, key string) checkpoint.Pending {
	expires := time.Now().Add(req.Timeout).UTC()
	ev := events.Interrupt{ID: interruptID(st.req.RunID), ToolCallID: req.ToolCallID, ExpiresAt: expires.Format(time.RFC3339)}
	if req.RunID != "" && req.RunID != st.req.RunID {
		// A sub-agent's call: name it as the client saw it (events.Nested).
		ev.SubagentRunID = req.RunID
		ev.ToolCallID = req.RunID + ":" + req.ToolCallID
	}
	meta := map[string]any{"tool": req.Tool, "toolType": req.ToolType, "arguments": json.RawMessage(req.Args)}
	if len(req.Commands) > 0 {
		meta["commands"] = req.Commands
	}
	if len(req.WorkDirs) > 0 {
		meta["redirects"], meta["assignments"], meta["workDirs"] = nonNil(req.Redirects), nonNil(req.Assignments), req.WorkDirs
	}
	if len(req.ResponseSchema) > 0 {
		ev.Reason, ev.ResponseSchema = "form", req.ResponseSchema
		ev.Message = fmt.Sprintf("%s asks for an answer", req.Tool)
	} else {
		ev.Reason, ev.ResponseSchema = "tool_approval", approvalSchema
		ev.Message = fmt.Sprintf("Approve %s %s?", req.Tool, req.OneLine())
	}
	ev.Metadata, _ = json.Marshal(meta)
	runID := cmp.Or(req.RunID, st.req.RunID)
	return checkpoint.Pending{Interrupt: ev, RunID: runID, ToolCallID: req.ToolCallID, Tool: req.Tool, ToolType: req.ToolType,
		Args: req.Args, Commands: req.Commands, ResponseSchema: req.ResponseSchema, Key: key, Timeout: req.Timeout, Expires: expires}
}

// interruptID is a new interrupt id of run runID: the run can be found
// from it on any replica (interruptRun), with nothing but the id.
func interruptID(runID string) string {
	return agent.NewID("int-") + "." + base64.RawURLEncoding.EncodeToString([]byte(runID))
}

// interruptRun is the run an interrupt id belongs to.
func interruptRun(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "int-")
	if !ok {
		return "", false
	}
	_, enc, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(b) == 0 {
		return "", false
	}
	return string(b), true
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
