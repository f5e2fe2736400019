//lint:file-ignore ST1005 these errors repeat the @ag-ui/client messages word for word, capitals and full stops included

package aguicheck

import (
	"errors"
	"fmt"
)

// chunkExpander ports the client's transformChunks (chunks/transform.ts): each
// *_CHUNK event becomes the START / CONTENT (ARGS) / END events it stands for,
// so verification sees the stream the client verifies. Only what verification
// reads is synthesized: type, ids, role, parentMessageId and subagentRunId.
//
// Assembly happens per lane, a lane being the owner the chunks belong to, so
// two subagents can stream chunks concurrently.
type chunkExpander struct {
	lanes     map[owner]*pendingStream
	laneOrder []owner // insertion order, like the JS Map the client keys lanes by
}

type streamKind int

const (
	textStream streamKind = iota
	toolStream
	reasoningStream
)

// pendingStream is the message or tool call one lane is assembling.
type pendingStream struct {
	kind streamKind
	id   string // messageId, or toolCallId for a tool call
	// The opener's own tag, which the synthesized END repeats.
	tag    owner
	tagged bool
	// Established by the opener; a continuation may repeat them but not change them.
	role            string // text only (absent means "assistant")
	name            optionalString
	toolCallName    string
	parentMessageID optionalString
}

type optionalString struct {
	set   bool
	value string
}

func optionalField(ev map[string]any, key string) optionalString {
	s, ok := ev[key].(string)
	return optionalString{set: ok, value: s}
}

func (o optionalString) quoted() string {
	if !o.set {
		return "(absent)"
	}
	return "'" + o.value + "'"
}

// Events that close only their own lane's pending stream before passing.
var closesOwnLane = map[string]bool{
	"TEXT_MESSAGE_START": true, "TEXT_MESSAGE_CONTENT": true, "TEXT_MESSAGE_END": true,
	"TOOL_CALL_START": true, "TOOL_CALL_ARGS": true, "TOOL_CALL_END": true, "TOOL_CALL_RESULT": true,
	"STATE_SNAPSHOT": true, "STATE_DELTA": true, "CUSTOM": true, "STEP_STARTED": true, "STEP_FINISHED": true,
	"REASONING_START": true, "REASONING_MESSAGE_START": true, "REASONING_MESSAGE_CONTENT": true,
	"REASONING_MESSAGE_END": true, "REASONING_END": true,
}

// Run-level events close every lane: a chunk stream must not outlive its run.
var closesAllLanes = map[string]bool{
	"RUN_STARTED": true, "RUN_FINISHED": true, "RUN_ERROR": true, "MESSAGES_SNAPSHOT": true,
}

// expand returns the events ev stands for, in order. On error the chunk
// produces nothing, though lanes it closed stay closed, as in the client.
func (x *chunkExpander) expand(ev map[string]any, typ string) ([]map[string]any, error) {
	switch {
	case closesOwnLane[typ]:
		tag, _ := tagOf(ev)
		return append(x.closeLane(tag), ev), nil
	case closesAllLanes[typ]:
		var out []map[string]any
		for len(x.laneOrder) > 0 {
			out = append(out, x.closeLane(x.laneOrder[0])...)
		}
		return append(out, ev), nil
	case typ == "SUBAGENT_FINISHED" || typ == "SUBAGENT_ERROR":
		if tag, ok := tagOf(ev); ok {
			return append(x.closeLane(tag), ev), nil
		}
		return []map[string]any{ev}, nil
	case typ == "TEXT_MESSAGE_CHUNK":
		return x.chunk(ev, textStream)
	case typ == "TOOL_CALL_CHUNK":
		return x.chunk(ev, toolStream)
	case typ == "REASONING_MESSAGE_CHUNK":
		return x.chunk(ev, reasoningStream)
	}
	return []map[string]any{ev}, nil
}

// Per-kind vocabulary: the chunk's type, its id field, the entity's name in
// messages, and the types of the events it expands into.
var chunkVocabulary = map[streamKind]struct {
	chunkType, idField, entity, start, content, end string
}{
	textStream:      {"TEXT_MESSAGE_CHUNK", "messageId", "text message", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"},
	toolStream:      {"TOOL_CALL_CHUNK", "toolCallId", "tool call", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"},
	reasoningStream: {"REASONING_MESSAGE_CHUNK", "messageId", "reasoning message", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"},
}

func (x *chunkExpander) chunk(ev map[string]any, kind streamKind) ([]map[string]any, error) {
	vocab := chunkVocabulary[kind]
	id := optionalField(ev, vocab.idField)
	tag, tagged := tagOf(ev)
	lane, err := x.resolveLane(kind, id, tag, tagged)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	open := x.lanes[lane]
	if open != nil && open.kind == kind && (!id.set || id.value == open.id) {
		if err := continuationAgrees(ev, kind, open); err != nil {
			return nil, err
		}
	} else {
		out = append(out, x.closeLane(lane)...)
		if !id.set {
			return nil, fmt.Errorf("First %s must have a %s", vocab.chunkType, vocab.idField)
		}
		open = &pendingStream{kind: kind, id: id.value, tag: tag, tagged: tagged}
		start := map[string]any{"type": vocab.start, vocab.idField: id.value}
		switch kind {
		case textStream:
			open.role = "assistant"
			if role, ok := stringField(ev, "role"); ok {
				open.role = role
			}
			open.name = optionalField(ev, "name")
			start["role"] = open.role
		case toolStream:
			name, ok := stringField(ev, "toolCallName")
			if !ok {
				return nil, errors.New("First TOOL_CALL_CHUNK must have a toolCallName")
			}
			open.toolCallName = name
			open.parentMessageID = optionalField(ev, "parentMessageId")
			if open.parentMessageID.set {
				start["parentMessageId"] = open.parentMessageID.value
			}
		case reasoningStream:
			start["role"] = "reasoning"
		}
		if tagged {
			start["subagentRunId"] = tag.id
		}
		x.setLane(lane, open)
		out = append(out, start)
	}

	_, hasDelta := ev["delta"]
	_, hasRaw := ev["rawEvent"]
	_, hasMetadata := ev["metadata"]
	// A content event carries the delta or the provider payload; a chunk that
	// produced nothing else but carries metadata still yields an empty one so
	// the metadata reaches the reducer.
	if hasDelta || hasRaw || (len(out) == 0 && hasMetadata) {
		content := map[string]any{"type": vocab.content, vocab.idField: open.id, "delta": ev["delta"]}
		// The incoming chunk's tag wins over the one the opener established.
		if tagged {
			content["subagentRunId"] = tag.id
		} else if open.tagged {
			content["subagentRunId"] = open.tag.id
		}
		out = append(out, content)
	}
	return out, nil
}

// continuationAgrees: a continuation chunk may repeat a field its opener
// established, but only with the same value (the client rejects it at this
// stage because the synthesized events would not carry the disagreement).
func continuationAgrees(ev map[string]any, kind streamKind, open *pendingStream) error {
	disagree := func(entity, field, incoming, established string) error {
		return fmt.Errorf("Cannot continue %s '%s': chunk %s '%s' does not match the open stream's %s %s.",
			entity, open.id, field, incoming, field, established)
	}
	switch kind {
	case textStream:
		if role, ok := stringField(ev, "role"); ok && role != open.role {
			return disagree("text message", "role", role, "'"+open.role+"'")
		}
		if name, ok := stringField(ev, "name"); ok && (!open.name.set || name != open.name.value) {
			return disagree("text message", "name", name, open.name.quoted())
		}
	case toolStream:
		if name, ok := stringField(ev, "toolCallName"); ok && name != open.toolCallName {
			return disagree("tool call", "toolCallName", name, "'"+open.toolCallName+"'")
		}
		if parent, ok := stringField(ev, "parentMessageId"); ok && (!open.parentMessageID.set || parent != open.parentMessageID.value) {
			return disagree("tool call", "parentMessageId", parent, open.parentMessageID.quoted())
		}
	}
	return nil
}

// resolveLane decides which lane a chunk belongs to. A named id continues
// wherever it is open; otherwise a tag names its lane; an untagged id-less
// chunk continues the parent's stream, or the only open stream of its kind.
func (x *chunkExpander) resolveLane(kind streamKind, id optionalString, tag owner, tagged bool) (owner, error) {
	vocab := chunkVocabulary[kind]
	if id.set {
		for _, lane := range x.laneOrder {
			if p := x.lanes[lane]; p.kind == kind && p.id == id.value {
				if tagged && tag != lane {
					return owner{}, fmt.Errorf("Cannot continue %s '%s': chunk subagentRunId '%s' does not match the open stream's subagent '%s'.",
						vocab.entity, id.value, tag.id, lane.label())
				}
				return lane, nil
			}
		}
		return tag, nil
	}
	if tagged {
		return tag, nil
	}
	if p := x.lanes[parentAgent]; p != nil && p.kind == kind {
		return parentAgent, nil
	}
	var candidates []owner
	for _, lane := range x.laneOrder {
		if x.lanes[lane].kind == kind {
			candidates = append(candidates, lane)
		}
	}
	switch {
	case len(candidates) == 1:
		return candidates[0], nil
	case len(candidates) > 1:
		return owner{}, fmt.Errorf("Ambiguous %s: it carries neither a %s nor a subagentRunId, but %d lanes have an open %s. Attribute the chunk to the subagent it belongs to.",
			vocab.chunkType, vocab.idField, len(candidates), vocab.entity)
	}
	return parentAgent, nil
}

func (x *chunkExpander) setLane(lane owner, p *pendingStream) {
	if x.lanes == nil {
		x.lanes = map[owner]*pendingStream{}
	}
	if _, exists := x.lanes[lane]; !exists {
		x.laneOrder = append(x.laneOrder, lane)
	}
	x.lanes[lane] = p
}

// closeLane ends whatever lane has open, returning the synthesized END.
func (x *chunkExpander) closeLane(lane owner) []map[string]any {
	p, ok := x.lanes[lane]
	if !ok {
		return nil
	}
	delete(x.lanes, lane)
	for i, l := range x.laneOrder {
		if l == lane {
			x.laneOrder = append(x.laneOrder[:i], x.laneOrder[i+1:]...)
			break
		}
	}
	vocab := chunkVocabulary[p.kind]
	end := map[string]any{"type": vocab.end, vocab.idField: p.id}
	if p.tagged {
		end["subagentRunId"] = p.tag.id
	}
	return []map[string]any{end}
}
