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
	thread string
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
	`"always":{"type":"boolean","description":"Approve this exact call (the same command, or the same tool with the same arguments) for the rest of the thread."}` +
	`},"required":["approved"]}`)

// interruptIndex finds the run an interrupt belongs to, and remembers the
// calls a person approved for good, per thread.
type interruptIndex struct {
	mu     sync.Mutex
	byID   map[string]*runState
	always map[string]map[string]bool // thread -> call key -> approved
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

// waiting reports whether a run of thread waits for answers.
func (x *interruptIndex) waiting(thread string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, st := range x.byID {
		if st.req.ThreadID == thread {
			return true
		}
	}
	return false
}

func (x *interruptIndex) allowed(thread, key string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.always[thread][key]
}

// maxAlways bounds the calls remembered per thread.
const maxAlways = 256

func (x *interruptIndex) allow(thread, key string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.always == nil {
		x.always = map[string]map[string]bool{}
	}
	if x.always[thread] == nil {
		x.always[thread] = map[string]bool{}
	}
	if len(x.always[thread]) < maxAlways {
		x.always[thread][key] = true
	}
}

// callKey is what approving a call "always" approves: each exact parsed
// command of a shell call, or the tool with its exact arguments.
func callKey(req tools.ApprovalRequest) string {
	if len(req.Commands) > 0 {
		return req.Tool + "\x00" + strings.Join(req.Commands, "\x00")
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
	if len(req.ResponseSchema) == 0 && st.s.interrupts.allowed(st.req.ThreadID, key) {
		return tools.ApprovalDecision{Approved: true, Remembered: true}, nil
	}
	in := &interrupt{req: req, key: key, thread: st.req.ThreadID, answer: make(chan answer, 1)}
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
		if a.always && a.decision.Approved && len(req.ResponseSchema) == 0 {
			st.s.interrupts.allow(in.thread, key)
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

func oneLineArgs(req tools.ApprovalRequest) string {
	if len(req.Commands) > 0 {
		return strings.Join(req.Commands, "; ")
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
