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
// closed before a tool call opens, so each stays contiguous. Each delta
// goes through the StreamChunk aspects before anything of it is emitted:
// a refused delta never reaches the client, and a rewritten one is what
// the client sees and the turn keeps.
type emitter struct {
	r         *run
	ctx       context.Context
	messageID string
	toolMeta  func(string) events.Meta

	textOpen      bool
	reasoningID   string // open reasoning message, "" when none
	reasoningSeq  int
	calls         []string      // started tool-call ids, in the order started
	byKey         []string      // started tool-call ids by Deltas key
	chunk         aspects.Chunk // reused: chunks are frequent
	hasChunkHooks bool
	chunkChecked  bool
}

func (e *emitter) emit(ev events.Event) { e.r.stream.Emit(ev) }

// filter runs the StreamChunk aspects on a delta before anything of it is
// emitted, and returns the delta to emit and keep ("" drops it).
func (e *emitter) filter(kind aspects.ChunkKind, delta, msgID, callID string) (string, error) {
	if !e.chunkChecked {
		e.hasChunkHooks, e.chunkChecked = e.r.agent.cfg.Aspects.HasChunk(), true
	}
	if !e.hasChunkHooks {
		return delta, nil
	}
	e.chunk = aspects.Chunk{Kind: kind, Delta: delta, MessageID: msgID, ToolCallID: callID}
	if err := e.r.agent.cfg.Aspects.Chunk(e.ctx, e.r.point, &e.chunk); err != nil {
		return "", err
	}
	return e.chunk.Delta, nil
}

// Text implements Deltas.
func (e *emitter) Text(delta string) (string, error) {
	delta, err := e.filter(aspects.ChunkText, delta, e.messageID, "")
	if err != nil || delta == "" {
		return delta, err
	}
	e.closeReasoning()
	if !e.textOpen {
		e.textOpen = true
		e.emit(events.Event{Type: events.TextMessageStart, MessageID: e.messageID, Role: "assistant"})
	}
	e.emit(events.Event{Type: events.TextMessageContent, MessageID: e.messageID, Delta: delta})
	return delta, nil
}

// Reasoning implements Deltas.
func (e *emitter) Reasoning(delta string) (string, error) {
	id, opening := e.reasoningID, e.reasoningID == ""
	if opening {
		id = e.reasoningIDAt(e.reasoningSeq + 1)
	}
	delta, err := e.filter(aspects.ChunkReasoning, delta, id, "")
	if err != nil || delta == "" {
		return delta, err
	}
	if opening {
		e.closeText()
		e.reasoningSeq++
		e.reasoningID = id
		e.emit(events.Event{Type: events.ReasoningStart, MessageID: id})
		e.emit(events.Event{Type: events.ReasoningMessageStart, MessageID: id})
	}
	e.emit(events.Event{Type: events.ReasoningMessageContent, MessageID: id, Delta: delta})
	return delta, nil
}

func (e *emitter) reasoningIDAt(seq int) string {
	return e.messageID + "-reasoning-" + strconv.Itoa(seq)
}

// ToolCallStart implements Deltas.
func (e *emitter) ToolCallStart(key int, id, name string) error {
	e.closeReasoning()
	e.closeText()
	id = e.r.uniqueCallID(id)
	for len(e.byKey) <= key {
		e.byKey = append(e.byKey, "")
	}
	e.byKey[key] = id
	e.calls = append(e.calls, id)
	e.emit(events.Event{Type: events.ToolCallStart, ToolCallID: id, ToolCallName: name, ParentMessageID: e.messageID,
		Meta: e.toolMeta(name)})
	return nil
}

// ToolCallArgs implements Deltas.
func (e *emitter) ToolCallArgs(key int, delta string) (string, error) {
	id := e.byKey[key]
	delta, err := e.filter(aspects.ChunkToolArgs, delta, e.messageID, id)
	if err != nil || delta == "" {
		return delta, err
	}
	e.emit(events.Event{Type: events.ToolCallArgs, ToolCallID: id, Delta: delta})
	return delta, nil
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

// idOf is the id the call of Deltas key was streamed under ("" when it
// was not).
func (e *emitter) idOf(key int) string {
	if key < len(e.byKey) {
		return e.byKey[key]
	}
	return ""
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

// filterTurn runs the StreamChunk aspects on a turn that was not streamed:
// once on its whole reasoning, its text and each call's arguments, before
// anything of it is emitted. The turn keeps what they keep.
func (e *emitter) filterTurn(t *Turn) error {
	if !e.r.agent.cfg.Aspects.HasChunk() {
		return nil
	}
	var err error
	if t.Reasoning != "" {
		if t.Reasoning, err = e.filter(aspects.ChunkReasoning, t.Reasoning, e.reasoningIDAt(1), ""); err != nil {
			return err
		}
	}
	if t.Content != "" {
		if t.Content, err = e.filter(aspects.ChunkText, t.Content, e.messageID, ""); err != nil {
			return err
		}
	}
	for i := range t.ToolCalls {
		tc := &t.ToolCalls[i]
		if tc.Arguments, err = e.filter(aspects.ChunkToolArgs, tc.Arguments, e.messageID, tc.ID); err != nil {
			return err
		}
	}
	return nil
}

// replay emits a non-streamed turn's reasoning and text as whole messages,
// filtered already (filterTurn). Its tool calls are announced by the
// wrapper when they run.
func (e *emitter) replay(t *Turn) {
	e.hasChunkHooks, e.chunkChecked = false, true
	if t.Reasoning != "" {
		_, _ = e.Reasoning(t.Reasoning)
	}
	if t.Content != "" {
		_, _ = e.Text(t.Content)
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
