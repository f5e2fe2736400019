package aguicheck

import (
	"fmt"
	"strings"
)

// verifier ports the client's verifyEvents (verify/verify.ts) state machine.
// Messages are the client's own, word for word, so a failure reads the same
// from either checker. This file holds the run, step and subagent rules and
// the owner bookkeeping; verify_streams.go the streamed entities.
//
// Unlike the client, which stops at the first error, the verifier goes on: a
// rejected event changes the state exactly as far as the client's code had
// changed it before throwing.
type verifier struct {
	activeMessages          orderedSet // open text messages
	activeToolCalls         orderedSet
	activeReasoningSpans    orderedSet // REASONING_START .. REASONING_END
	activeReasoningMessages orderedSet // REASONING_MESSAGE_START .. _END

	// Owners per entity kind, kept for the whole run (a continuation may come
	// after its entity closed, e.g. an encrypted value after TOOL_CALL_END).
	messageOwners, toolCallOwners, activityOwners, reasoningOwners map[string]owner

	// Steps are keyed by (owner, name): a subagent may run a step with the
	// same name as its parent's. Owners in first-mention order, as in the JS Map.
	steps      map[owner]*orderedSet
	stepOwners []owner

	activeSubagents orderedSet
	// Closed in this run: a subagentRunId names one invocation and is never reused.
	closedSubagents map[string]bool

	runFinished, runError, firstEventReceived, runStarted bool
}

func newVerifier(fragment bool) *verifier {
	v := &verifier{}
	v.resetRunState()
	// A fragment is a slice from inside a run: its RUN_STARTED is behind it.
	v.runStarted = fragment
	v.firstEventReceived = fragment
	return v
}

func (v *verifier) resetRunState() {
	v.activeMessages.clear()
	v.activeToolCalls.clear()
	v.activeReasoningSpans.clear()
	v.activeReasoningMessages.clear()
	v.messageOwners = map[string]owner{}
	v.toolCallOwners = map[string]owner{}
	v.activityOwners = map[string]owner{}
	v.reasoningOwners = map[string]owner{}
	v.steps = map[owner]*orderedSet{}
	v.stepOwners = nil
	v.activeSubagents.clear()
	v.closedSubagents = map[string]bool{}
	v.runFinished = false
	v.runError = false
	v.runStarted = true
}

// check applies one (expanded) event and returns the client's error message,
// or "" if the client would accept it.
func (v *verifier) check(ev map[string]any, typ string) string {
	if v.runError && typ != "RUN_STARTED" {
		return fmt.Sprintf("Cannot send event type '%s': The run has already errored with 'RUN_ERROR'. No further events can be sent.", typ)
	}
	if v.runFinished && typ != "RUN_ERROR" && typ != "RUN_STARTED" {
		return fmt.Sprintf("Cannot send event type '%s': The run has already finished with 'RUN_FINISHED'. Start a new run with 'RUN_STARTED'.", typ)
	}
	if !v.firstEventReceived {
		v.firstEventReceived = true
		if typ != "RUN_STARTED" && typ != "RUN_ERROR" {
			return "First event must be 'RUN_STARTED'"
		}
	} else if typ == "RUN_STARTED" {
		if v.runStarted && !v.runFinished && !v.runError {
			return "Cannot send 'RUN_STARTED' while a run is still active. The previous run must be finished with 'RUN_FINISHED' before starting a new run."
		}
		if v.runFinished || v.runError {
			v.resetRunState()
		}
	}
	// The client's null checks on subagentRunId and the lifecycle fields come
	// next; the schema stage reports those (zod rejects them first on the wire).

	switch typ {
	case "TEXT_MESSAGE_START":
		return v.textMessageStart(ev)
	case "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END":
		return v.textMessageContinue(ev, typ)
	case "TOOL_CALL_START":
		return v.toolCallStart(ev)
	case "TOOL_CALL_ARGS", "TOOL_CALL_END":
		return v.toolCallContinue(ev, typ)
	case "TOOL_CALL_RESULT":
		return v.toolCallResult(ev)
	case "REASONING_START", "REASONING_MESSAGE_START":
		return v.reasoningOpen(ev, typ)
	case "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END":
		return v.reasoningContinue(ev, typ)
	case "REASONING_ENCRYPTED_VALUE":
		return v.encryptedValue(ev, typ)
	case "ACTIVITY_SNAPSHOT":
		return v.activitySnapshot(ev)
	case "ACTIVITY_DELTA":
		return v.activityDelta(ev, typ)
	case "STEP_STARTED":
		return v.stepStarted(ev)
	case "STEP_FINISHED":
		return v.stepFinished(ev)
	case "SUBAGENT_STARTED":
		return v.subagentStarted(ev)
	case "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
		return v.subagentEnded(ev, typ)
	case "MESSAGES_SNAPSHOT":
		// Authoritative: the snapshot restates the conversation, so its owners
		// replace the recorded ones.
		v.seedOwners(ev["messages"], true)
	case "RUN_STARTED":
		v.runStarted = true
		// The input echo is replayed history: it seeds only unclaimed ids.
		if input, ok := ev["input"].(map[string]any); ok {
			v.seedOwners(input["messages"], false)
		}
	case "RUN_FINISHED":
		return v.runFinishedCheck()
	case "RUN_ERROR":
		v.runError = true
	}
	return ""
}

// subagentTagError: a continuation must not disagree with the owner its
// opener recorded. An absent tag never disagrees; a recorded parent owner is
// an owner too, so a tagged continuation of a parent's entity does.
func subagentTagError(typ string, ev map[string]any, recorded owner, known bool, kind, id string) string {
	tag, tagged := tagOf(ev)
	if !tagged || !known || recorded == tag {
		return ""
	}
	return fmt.Sprintf("Cannot send '%s': subagentRunId '%s' does not match the %s '%s' opener's subagent '%s'.",
		typ, tag.id, kind, id, recorded.label())
}

// seedOwners records the owners of replayed messages (MESSAGES_SNAPSHOT, the
// RUN_STARTED input echo), and of each assistant message's tool calls.
func (v *verifier) seedOwners(raw any, authoritative bool) {
	messages, _ := raw.([]any)
	for _, item := range messages {
		msg, ok := item.(map[string]any)
		if !ok {
			continue
		}
		id, ok := stringField(msg, "id")
		if !ok {
			continue
		}
		msgOwner, _ := tagOf(msg)
		bucket := v.messageOwners
		switch msg["role"] {
		case "reasoning":
			bucket = v.reasoningOwners
		case "activity":
			bucket = v.activityOwners
		}
		if _, claimed := bucket[id]; authoritative || !claimed {
			bucket[id] = msgOwner
		}
		calls, _ := msg["toolCalls"].([]any)
		for _, c := range calls {
			call, _ := c.(map[string]any)
			callID, ok := stringField(call, "id")
			if !ok {
				continue
			}
			if _, claimed := v.toolCallOwners[callID]; authoritative || !claimed {
				v.toolCallOwners[callID] = msgOwner
			}
		}
	}
}

func (v *verifier) stepsFor(o owner) *orderedSet {
	s, ok := v.steps[o]
	if !ok {
		s = &orderedSet{}
		v.steps[o] = s
		v.stepOwners = append(v.stepOwners, o)
	}
	return s
}

func stepOwnerPhrase(o owner) string {
	if !o.subagent {
		return "the parent agent"
	}
	return fmt.Sprintf("subagent '%s'", o.id)
}

func (v *verifier) stepStarted(ev map[string]any) string {
	name, ok := stringField(ev, "stepName")
	if !ok {
		return ""
	}
	o, tagged := tagOf(ev)
	if v.stepsFor(o).has(name) {
		where := ""
		if tagged {
			where = fmt.Sprintf(" in subagent '%s'", o.id)
		}
		return fmt.Sprintf("Step %q is already active for 'STEP_STARTED'%s", name, where)
	}
	v.stepsFor(o).add(name)
	return ""
}

func (v *verifier) stepFinished(ev map[string]any) string {
	name, ok := stringField(ev, "stepName")
	if !ok {
		return ""
	}
	o, _ := tagOf(ev)
	if !v.stepsFor(o).has(name) {
		// Open under another owner is the likelier mistake (a producer tagging
		// from "whichever subagent is active"), so the client says so.
		for _, other := range v.stepOwners {
			if other != o && v.steps[other].has(name) {
				return fmt.Sprintf("Cannot send 'STEP_FINISHED' for step %q attributed to %s: that step is open under %s. A step must be finished by whoever started it.",
					name, stepOwnerPhrase(o), stepOwnerPhrase(other))
			}
		}
		return fmt.Sprintf("Cannot send 'STEP_FINISHED' for step %q that was not started", name)
	}
	v.stepsFor(o).remove(name)
	return ""
}

func (v *verifier) subagentStarted(ev map[string]any) string {
	id, ok := stringField(ev, "subagentRunId")
	if !ok {
		return "" // the schema stage reports the missing identity
	}
	if v.activeSubagents.has(id) {
		return fmt.Sprintf("Cannot send 'SUBAGENT_STARTED': subagent '%s' is already active. Finish it with 'SUBAGENT_FINISHED' first.", id)
	}
	if v.closedSubagents[id] {
		return fmt.Sprintf("Cannot send 'SUBAGENT_STARTED': subagent '%s' has already finished in this run. Subagent IDs are per-invocation and cannot be reused.", id)
	}
	if parent, ok := stringField(ev, "parentSubagentRunId"); ok && !v.activeSubagents.has(parent) && !v.closedSubagents[parent] {
		return fmt.Sprintf("Cannot send 'SUBAGENT_STARTED': parentSubagentRunId '%s' has not been started in this run.", parent)
	}
	v.activeSubagents.add(id)
	return ""
}

func (v *verifier) subagentEnded(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "subagentRunId")
	if !ok {
		return ""
	}
	if !v.activeSubagents.has(id) {
		return fmt.Sprintf("Cannot send '%s': no active subagent found with ID '%s'. A 'SUBAGENT_STARTED' event must be sent first.", typ, id)
	}
	v.activeSubagents.remove(id)
	v.closedSubagents[id] = true
	return ""
}

// runFinishedCheck: a run may only finish with nothing left open.
func (v *verifier) runFinishedCheck() string {
	var openSteps []string
	for _, o := range v.stepOwners {
		for _, name := range v.steps[o].items {
			if o.subagent {
				name = fmt.Sprintf("%s (subagent '%s')", name, o.id)
			}
			openSteps = append(openSteps, name)
		}
	}
	stillActive := func(what, which string) string {
		return fmt.Sprintf("Cannot send 'RUN_FINISHED' while %s are still active: %s", what, which)
	}
	switch {
	case len(openSteps) > 0:
		return stillActive("steps", strings.Join(openSteps, ", "))
	case v.activeMessages.len() > 0:
		return stillActive("text messages", v.activeMessages.joined())
	case v.activeReasoningMessages.len() > 0:
		return stillActive("reasoning messages", v.activeReasoningMessages.joined())
	case v.activeReasoningSpans.len() > 0:
		return stillActive("reasoning spans", v.activeReasoningSpans.joined())
	case v.activeToolCalls.len() > 0:
		return stillActive("tool calls", v.activeToolCalls.joined())
	case v.activeSubagents.len() > 0:
		return stillActive("subagents", v.activeSubagents.joined())
	}
	v.runFinished = true
	return ""
}
