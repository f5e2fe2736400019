package aguicheck

import "fmt"

// The verifier's rules for streamed entities: text messages, tool calls,
// reasoning spans and messages, encrypted values and activities. Each opener
// records its owner the first time an id is seen (first writer wins, and the
// owner outlives the close), and each continuation must agree with it.

func (v *verifier) textMessageStart(ev map[string]any) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	if v.activeMessages.has(id) {
		return fmt.Sprintf("Cannot send 'TEXT_MESSAGE_START' event: A text message with ID '%s' is already in progress. Complete it with 'TEXT_MESSAGE_END' first.", id)
	}
	recorded, known := v.messageOwners[id]
	if err := subagentTagError("TEXT_MESSAGE_START", ev, recorded, known, "message", id); err != "" {
		return err
	}
	v.activeMessages.add(id)
	if !known {
		v.messageOwners[id], _ = tagOf(ev)
	}
	return ""
}

func (v *verifier) textMessageContinue(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	if !v.activeMessages.has(id) {
		if typ == "TEXT_MESSAGE_CONTENT" {
			return fmt.Sprintf("Cannot send 'TEXT_MESSAGE_CONTENT' event: No active text message found with ID '%s'. Start a text message with 'TEXT_MESSAGE_START' first.", id)
		}
		return fmt.Sprintf("Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID '%s'. A 'TEXT_MESSAGE_START' event must be sent first.", id)
	}
	recorded, known := v.messageOwners[id]
	if err := subagentTagError(typ, ev, recorded, known, "message", id); err != "" {
		return err
	}
	if typ == "TEXT_MESSAGE_END" {
		v.activeMessages.remove(id)
	}
	return ""
}

// toolCallStart: a tool call lives inside the assistant message its
// parentMessageId names, so its owner is that message's owner; an explicit
// tag that disagrees cannot be represented and is rejected.
func (v *verifier) toolCallStart(ev map[string]any) string {
	id, ok := stringField(ev, "toolCallId")
	if !ok {
		return ""
	}
	if v.activeToolCalls.has(id) {
		return fmt.Sprintf("Cannot send 'TOOL_CALL_START' event: A tool call with ID '%s' is already in progress. Complete it with 'TOOL_CALL_END' first.", id)
	}
	tag, tagged := tagOf(ev)
	parentID, hasParent := stringField(ev, "parentMessageId")
	var inherited owner
	var inherits bool
	if hasParent {
		if parentOwner, known := v.messageOwners[parentID]; known {
			if tagged && tag != parentOwner {
				return fmt.Sprintf("Cannot send 'TOOL_CALL_START': subagentRunId '%s' does not match its parent message '%s' owner '%s'. A tool call belongs to the message that carries it.",
					tag.id, parentID, parentOwner.label())
			}
			inherited, inherits = parentOwner, true
		}
	}
	existing, reopened := v.toolCallOwners[id]
	if reopened {
		if err := subagentTagError("TOOL_CALL_START", ev, existing, true, "tool call", id); err != "" {
			return err
		}
		// An untagged reopen's effective owner is the one it inherits from its
		// parent message; it must still be the call's recorded owner.
		if !tagged && inherits && inherited != existing {
			return fmt.Sprintf("Cannot send 'TOOL_CALL_START': tool call '%s' is owned by '%s' but its parent message '%s' is owned by '%s'. A tool call belongs to the message that carries it.",
				id, existing.label(), parentID, inherited.label())
		}
	}
	v.activeToolCalls.add(id)
	if !reopened {
		switch {
		case tagged:
			v.toolCallOwners[id] = tag
		case inherits:
			v.toolCallOwners[id] = inherited
		default:
			v.toolCallOwners[id] = parentAgent
		}
	}
	return ""
}

func (v *verifier) toolCallContinue(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "toolCallId")
	if !ok {
		return ""
	}
	if !v.activeToolCalls.has(id) {
		if typ == "TOOL_CALL_ARGS" {
			return fmt.Sprintf("Cannot send 'TOOL_CALL_ARGS' event: No active tool call found with ID '%s'. Start a tool call with 'TOOL_CALL_START' first.", id)
		}
		return fmt.Sprintf("Cannot send 'TOOL_CALL_END' event: No active tool call found with ID '%s'. A 'TOOL_CALL_START' event must be sent first.", id)
	}
	recorded, known := v.toolCallOwners[id]
	if err := subagentTagError(typ, ev, recorded, known, "tool call", id); err != "" {
		return err
	}
	if typ == "TOOL_CALL_END" {
		v.activeToolCalls.remove(id)
	}
	return ""
}

// toolCallResult mints a tool message, whose owner is the result's own tag
// (the executor may differ from the caller); the newest mint wins. The client
// does not check that toolCallId names a call it has seen.
func (v *verifier) toolCallResult(ev map[string]any) string {
	if id, ok := stringField(ev, "messageId"); ok {
		v.messageOwners[id], _ = tagOf(ev)
	}
	return ""
}

// reasoningOpen handles both reasoning openers. A span (REASONING_START) and
// a reasoning message (REASONING_MESSAGE_START) are tracked separately, so
// one id may name both; their owner is shared.
func (v *verifier) reasoningOpen(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	open := &v.activeReasoningMessages
	if typ == "REASONING_START" {
		open = &v.activeReasoningSpans
	}
	if open.has(id) {
		if typ == "REASONING_START" {
			return fmt.Sprintf("Cannot send 'REASONING_START' event: A reasoning span with ID '%s' is already in progress. Complete it with 'REASONING_END' first.", id)
		}
		return fmt.Sprintf("Cannot send 'REASONING_MESSAGE_START' event: A reasoning message with ID '%s' is already in progress. Complete it with 'REASONING_MESSAGE_END' first.", id)
	}
	recorded, known := v.reasoningOwners[id]
	if err := subagentTagError(typ, ev, recorded, known, "reasoning message", id); err != "" {
		return err
	}
	open.add(id)
	if !known {
		v.reasoningOwners[id], _ = tagOf(ev)
	}
	return ""
}

func (v *verifier) reasoningContinue(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	isSpan := typ == "REASONING_END"
	open := &v.activeReasoningMessages
	if isSpan {
		open = &v.activeReasoningSpans
	}
	if !open.has(id) {
		if isSpan {
			return fmt.Sprintf("Cannot send 'REASONING_END' event: No active reasoning span found with ID '%s'. A 'REASONING_START' event must be sent first.", id)
		}
		return fmt.Sprintf("Cannot send '%s' event: No active reasoning message found with ID '%s'. Start a reasoning message with 'REASONING_MESSAGE_START' first.", typ, id)
	}
	recorded, known := v.reasoningOwners[id]
	if err := subagentTagError(typ, ev, recorded, known, "reasoning message", id); err != "" {
		return err
	}
	if typ != "REASONING_MESSAGE_CONTENT" {
		open.remove(id)
	}
	return ""
}

// encryptedValue continues the entity its subtype names: a tool call, or a
// message of either kind (text or reasoning; ids are unique per kind).
func (v *verifier) encryptedValue(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "entityId")
	if !ok {
		return ""
	}
	var recorded owner
	var known bool
	kind := "reasoning message"
	switch ev["subtype"] {
	case "tool-call":
		recorded, known = v.toolCallOwners[id]
		kind = "tool call"
	case "message":
		recorded, known = v.messageOwners[id]
		if !known {
			recorded, known = v.reasoningOwners[id]
		}
		kind = "message"
	default:
		recorded, known = v.reasoningOwners[id]
	}
	return subagentTagError(typ, ev, recorded, known, kind, id)
}

// activitySnapshot: only a replacing snapshot (replace absent or true) re-owns
// an activity that already exists.
func (v *verifier) activitySnapshot(ev map[string]any) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	_, exists := v.activityOwners[id]
	if !exists || ev["replace"] != false {
		v.activityOwners[id], _ = tagOf(ev)
	}
	return ""
}

func (v *verifier) activityDelta(ev map[string]any, typ string) string {
	id, ok := stringField(ev, "messageId")
	if !ok {
		return ""
	}
	recorded, known := v.activityOwners[id]
	return subagentTagError(typ, ev, recorded, known, "activity", id)
}
