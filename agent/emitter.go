package agent

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
)

// emitter turns one LLM turn into AG-UI events as it streams: a reasoning
// message, an assistant text message, and tool calls (START and ARGS as
// they arrive, END when the turn is complete). Reasoning and text are
// closed before a tool call opens, so each stays contiguous.
type emitter struct {
	r         *run
	ctx       context.Context
	messageID string
	toolMeta  func(string) events.Meta

	textOpen      bool
	reasoningID   string // open reasoning message, "" when none
	reasoningSeq  int
	calls         []string // started tool-call ids, by stream index order
	callIdx       map[int]string
	chunk         aspects.Chunk // reused: chunks are frequent
	hasChunkHooks bool
	chunkChecked  bool
}

func (e *emitter) emit(ev events.Event) { e.r.stream.Emit(ev) }

func (e *emitter) onChunk(kind aspects.ChunkKind, delta, msgID, callID string) error {
	if !e.chunkChecked {
		e.hasChunkHooks, e.chunkChecked = e.r.agent.cfg.Aspects.HasChunk(), true
	}
	if !e.hasChunkHooks {
		return nil
	}
	e.chunk = aspects.Chunk{Kind: kind, Delta: delta, MessageID: msgID, ToolCallID: callID}
	return e.r.agent.cfg.Aspects.Chunk(e.ctx, e.r.point, &e.chunk)
}

// Text implements Deltas.
func (e *emitter) Text(delta string) error {
	e.closeReasoning()
	if !e.textOpen {
		e.textOpen = true
		e.emit(events.Event{Type: events.TextMessageStart, MessageID: e.messageID, Role: "assistant"})
	}
	e.emit(events.Event{Type: events.TextMessageContent, MessageID: e.messageID, Delta: delta})
	return e.onChunk(aspects.ChunkText, delta, e.messageID, "")
}

// Reasoning implements Deltas.
func (e *emitter) Reasoning(delta string) error {
	if e.reasoningID == "" {
		e.closeText()
		e.reasoningSeq++
		e.reasoningID = e.messageID + "-reasoning-" + strconv.Itoa(e.reasoningSeq)
		e.emit(events.Event{Type: events.ReasoningStart, MessageID: e.reasoningID})
		e.emit(events.Event{Type: events.ReasoningMessageStart, MessageID: e.reasoningID})
	}
	e.emit(events.Event{Type: events.ReasoningMessageContent, MessageID: e.reasoningID, Delta: delta})
	return e.onChunk(aspects.ChunkReasoning, delta, e.reasoningID, "")
}

// ToolCallStart implements Deltas.
func (e *emitter) ToolCallStart(index int, id, name string) error {
	e.closeReasoning()
	e.closeText()
	id = e.r.uniqueCallID(id)
	if e.callIdx == nil {
		e.callIdx = map[int]string{}
	}
	e.callIdx[index] = id
	e.calls = append(e.calls, id)
	m := e.toolMeta(name)
	e.emit(events.Event{Type: events.ToolCallStart, ToolCallID: id, ToolCallName: name, ParentMessageID: e.messageID,
		Meta: events.Meta{ToolType: m.ToolType, TargetID: m.TargetID}})
	return nil
}

// ToolCallArgs implements Deltas.
func (e *emitter) ToolCallArgs(index int, delta string) error {
	id := e.callIdx[index]
	e.emit(events.Event{Type: events.ToolCallArgs, ToolCallID: id, Delta: delta})
	return e.onChunk(aspects.ChunkToolArgs, delta, e.messageID, id)
}

func (e *emitter) closeText() {
	if e.textOpen {
		e.textOpen = false
		e.emit(events.Event{Type: events.TextMessageEnd, MessageID: e.messageID})
	}
}

func (e *emitter) closeReasoning() {
	if e.reasoningID != "" {
		e.emit(events.Event{Type: events.ReasoningMessageEnd, MessageID: e.reasoningID})
		e.emit(events.Event{Type: events.ReasoningEnd, MessageID: e.reasoningID})
		e.reasoningID = ""
	}
}

// close ends the turn's open messages and streamed tool calls (calls an
// AfterLLM rewrite dropped are ended too, so that nothing stays open).
func (e *emitter) close() {
	e.closeReasoning()
	e.closeText()
	for _, id := range e.calls {
		e.emit(events.Event{Type: events.ToolCallEnd, ToolCallID: id})
	}
}

// replay emits a non-streamed turn's reasoning and text as whole messages.
// Its tool calls are announced by the wrapper when they run.
func (e *emitter) replay(t *Turn) {
	if t.Reasoning != "" {
		_ = e.Reasoning(t.Reasoning)
	}
	if t.Content != "" {
		_ = e.Text(t.Content)
	}
}

// jsonObject encodes alternating keys and values as a JSON object.
func jsonObject(kv ...any) (json.RawMessage, error) {
	m := make(map[string]any, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return json.Marshal(m)
}
