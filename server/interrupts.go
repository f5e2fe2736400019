package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// interrupt is a tool call waiting for a person.
type interrupt struct {
	ev     events.Interrupt
	req    tools.ApprovalRequest
	key    string // what "always allow" remembers: the exact call
	answer chan answer
}

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

// interruptIndex finds the run an interrupt belongs to, and remembers the
// calls a person approved for good, per thread of one caller.
type interruptIndex struct {
	mu     sync.Mutex
	byID   map[string]*runState
	always *approvalMemory
}

func (x *interruptIndex) add(id string, st *runState) {
	x.mu.Lock()
	if x.byID == nil {
		x.byID = map[string]*runState{}
	}
	x.byID[id] = st
	x.mu.Unlock()
}

func (x *interruptIndex) remove(id string) {
	x.mu.Lock()
	delete(x.byID, id)
	x.mu.Unlock()
}

func (x *interruptIndex) find(id string) (*runState, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	st, ok := x.byID[id]
	return st, ok
}

// waiting reports whether a run of thread, started by owner, waits for
// answers.
func (x *interruptIndex) waiting(owner, thread string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, st := range x.byID {
		if st.req.ThreadID == thread && st.req.Owner == owner {
			return true
		}
	}
	return false
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

// Approve implements tools.Approver: the run pauses (its segment ends with
// an interrupt) until a person answers through Store.Resume, the timeout
// passes (a denial), or the run is cancelled.
func (st *runState) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	key := callKey(req)
	if len(req.ResponseSchema) == 0 && st.s.interrupts.memory().allowed(st.alwaysScope(), key) {
		return tools.ApprovalDecision{Approved: true, Remembered: true}, nil
	}
	in := &interrupt{req: req, key: key, answer: make(chan answer, 1)}
	in.ev = events.Interrupt{ID: agent.NewID("int-"), ToolCallID: req.ToolCallID,
		ExpiresAt: time.Now().Add(req.Timeout).UTC().Format(time.RFC3339)}
	if req.RunID != "" && req.RunID != st.req.RunID {
		// A sub-agent's call: name it as the client saw it (events.Nested).
		in.ev.SubagentRunID = req.RunID
		in.ev.ToolCallID = req.RunID + ":" + req.ToolCallID
	}
	meta := map[string]any{"tool": req.Tool, "toolType": req.ToolType, "arguments": json.RawMessage(req.Args)}
	if len(req.Commands) > 0 {
		meta["commands"] = req.Commands
	}
	if len(req.WorkDirs) > 0 {
		meta["redirects"], meta["assignments"], meta["workDirs"] = nonNil(req.Redirects), nonNil(req.Assignments), req.WorkDirs
	}
	if len(req.ResponseSchema) > 0 {
		in.ev.Reason, in.ev.ResponseSchema = "form", req.ResponseSchema
		in.ev.Message = fmt.Sprintf("%s asks for an answer", req.Tool)
	} else {
		in.ev.Reason, in.ev.ResponseSchema = "tool_approval", approvalSchema
		in.ev.Message = fmt.Sprintf("Approve %s %s?", req.Tool, oneLineArgs(req))
	}
	in.ev.Metadata, _ = json.Marshal(meta)

	st.s.interrupts.add(in.ev.ID, st)
	defer st.s.interrupts.remove(in.ev.ID)
	st.mu.Lock()
	st.raised = append(st.raised, in)
	if st.seg != nil {
		st.pauseLocked()
	}
	st.mu.Unlock()
	defer st.settle(in)

	timer := time.NewTimer(req.Timeout)
	defer timer.Stop()
	select {
	case a := <-in.answer:
		// "Always" approves the call the person saw; edited arguments
		// are approved this once.
		if a.always && a.decision.Approved && len(req.ResponseSchema) == 0 && (len(a.decision.Args) == 0 || bytes.Equal(a.decision.Args, req.Args)) {
			st.s.interrupts.memory().allow(st.alwaysScope(), key)
		}
		return a.decision, nil
	case <-timer.C:
		return tools.ApprovalDecision{Reason: fmt.Sprintf("nobody answered within %s", req.Timeout)}, nil
	case <-ctx.Done():
		return tools.ApprovalDecision{}, ctx.Err()
	}
}

// settle forgets an interrupt once its call has its answer.
func (st *runState) settle(in *interrupt) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.open, in.ev.ID)
	st.raised = slices.DeleteFunc(st.raised, func(x *interrupt) bool { return x == in })
	st.reg.SetInterrupts(st.openList())
}

func (st *runState) openList() []events.Interrupt {
	ids := slices.Sorted(maps.Keys(st.open))
	out := make([]events.Interrupt, 0, len(ids))
	for _, id := range ids {
		out = append(out, st.open[id].ev)
	}
	return out
}

// oneLineArgs is the call as the question shows it: a shell call's
// commands with every redirect, variable assignment and directory of the
// call, or the tool's arguments.
func oneLineArgs(req tools.ApprovalRequest) string {
	if len(req.Commands) > 0 || len(req.WorkDirs) > 0 {
		var b strings.Builder
		b.WriteString(strings.Join(req.Commands, "; "))
		if len(req.Redirects) > 0 {
			b.WriteString(" with redirects " + strings.Join(req.Redirects, ", "))
		}
		if len(req.Assignments) > 0 {
			b.WriteString(" setting " + strings.Join(req.Assignments, ", "))
		}
		if len(req.WorkDirs) > 0 {
			b.WriteString(" in work_dir " + req.WorkDirs[0])
			if len(req.WorkDirs) > 1 {
				b.WriteString(" (then " + strings.Join(req.WorkDirs[1:], ", ") + ")")
			}
		}
		return b.String()
	}
	var b bytes.Buffer
	if json.Compact(&b, req.Args) != nil {
		return string(req.Args)
	}
	if b.Len() > 300 {
		return b.String()[:300] + "…"
	}
	return b.String()
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
