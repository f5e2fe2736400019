package server

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// A record is scrubbed once, when it is written after its run, never on
// the run's path. What the model streamed is scrubbed as whole messages:
// the deltas of one message (one choice's content, its reasoning, one
// tool call's arguments) are joined, the secrets found in the joined
// text, and each secret redacted across the chunks it was split over
// (scrub.RedactPieces): the chunk where it begins shows [REDACTED], the
// rest of it is removed from that chunk and the ones after. The answers
// as streamed and the events are cut the same way, so a replay of the
// record, which streams its answers again, emits its events.

// recordScrubber scrubs a record with every scrubber its run used (its
// agents', sub-agents' included), or the token patterns alone.
type recordScrubber []tools.Scrubber

// spanFinder is a scrubber that tells where the secrets are
// (*scrub.Scrubber).
type spanFinder interface {
	Find(text string, spans []scrub.Span) []scrub.Span
}

// add adds sc unless it is there already; the caller holds the
// recording's lock.
func (rs recordScrubber) add(sc tools.Scrubber) recordScrubber {
	if sc == nil || reflect.TypeOf(sc).Comparable() && slices.Contains(rs, sc) {
		return rs
	}
	return append(rs, sc)
}

// find returns the merged spans of text's secrets.
func (rs recordScrubber) find(text string) []scrub.Span {
	var spans []scrub.Span
	if len(rs) == 0 {
		return defaultScrubber.Find(text, nil)
	}
	for _, sc := range rs {
		f, ok := sc.(spanFinder)
		if !ok {
			f = defaultScrubber
		}
		spans = f.Find(text, spans)
	}
	return scrub.MergeSpans(spans)
}

// pieces redacts the deltas of one streamed message (see RedactPieces).
func (rs recordScrubber) pieces(p []string) ([]string, bool) {
	out, changed := scrub.RedactPieces(p, rs.find(strings.Join(p, "")))
	// A scrubber that cannot tell where its secrets are scrubs each
	// piece on its own as well.
	for _, sc := range rs {
		if _, ok := sc.(spanFinder); ok {
			continue
		}
		for i := range out {
			if s := sc.Scrub(out[i]); s != out[i] {
				if !changed {
					out, changed = slices.Clone(out), true
				}
				out[i] = s
			}
		}
	}
	return out, changed
}

// Scrub redacts text whole.
func (rs recordScrubber) Scrub(text string) string {
	if spans := rs.find(text); len(spans) > 0 {
		out, _ := scrub.RedactPieces([]string{text}, spans)
		text = out[0]
	}
	for _, sc := range rs {
		if _, ok := sc.(spanFinder); !ok {
			text = sc.Scrub(text)
		}
	}
	return text
}

// scrubRecord scrubs rec, a copy of the record made at the run's end
// which it may change (but not the arrays it shares with the recording):
// the answers of its LLM calls at bodies, its events, its tool calls'
// events, what its sessions recalled and kept, its input.
func scrubRecord(rec *runrecord.Record, rs recordScrubber, bodies []int) {
	for _, i := range bodies {
		w := &rec.LLMCalls[i].Response
		body := w.Body
		if w.BodyBytes != nil {
			body = string(w.BodyBytes)
		}
		body = scrubAnswer(body, rs)
		if utf8.ValidString(body) {
			w.Body, w.BodyBytes = body, nil
		} else {
			w.Body, w.BodyBytes = "", []byte(body)
		}
	}
	rec.Request.Input = rs.Scrub(rec.Request.Input)
	rec.Events = scrubEvents(rec.Events, rs, agUIKeys)
	rec.ToolCalls = slices.Clone(rec.ToolCalls)
	for i := range rec.ToolCalls {
		rec.ToolCalls[i].Events = scrubEvents(rec.ToolCalls[i].Events, rs, goKeys)
	}
	rec.Memory = slices.Clone(rec.Memory)
	for i := range rec.Memory {
		m := &rec.Memory[i]
		m.Events = scrubEvents(m.Events, rs, goKeys)
		if len(m.Messages) > 0 {
			m.Messages = scrubJSON(m.Messages, rs)
		}
		m.Error = rs.Scrub(m.Error)
	}
}

// keepScrubbedEvents, for a record whose events are in the recording's
// event log (Recording.Events), reads them back once the log has ended and
// keeps them scrubbed in the record when scrubbing changed them: the
// record's events, exported and compared by its replays, are then its
// scrubbed answers' (a secret the model spoke is redacted in both). The
// log itself keeps what the run's clients were sent.
func (s *Store) keepScrubbedEvents(ctx context.Context, rec *runrecord.Record, rs recordScrubber) {
	raw, err := s.RecordedEvents(ctx, rec)
	if err != nil {
		s.log.Warn("run record: its events not scrubbed", "run", rec.Meta.RunID, "err", err)
		return
	}
	evs := rawEvents(raw)
	if scrubbed := scrubEvents(evs, rs, agUIKeys); !slices.EqualFunc(evs, scrubbed, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		rec.Events = scrubbed
	}
}

// piece is one delta of a streamed message: where its JSON string is in
// its line (or event), and its text.
type piece struct {
	at, start, end int
	text           string
}

// messageKey names a streamed message: in an answer, its choice and its
// part (content, reasoning, the arguments of the call at call); in
// events, the event type and its message or tool-call id.
type messageKey struct {
	part         string
	id           string
	choice, call int64
}

// stream gathers the pieces of each streamed message, in order.
type stream struct {
	keys   []messageKey
	pieces map[messageKey][]piece
}

// add adds the JSON string v, found in text (numbered at), as a piece
// of the message k; v's Index is its offset in text.
func (s *stream) add(k messageKey, text string, at int, v gjson.Result) {
	if v.Type != gjson.String || v.Index <= 0 || v.Index+len(v.Raw) > len(text) || text[v.Index:v.Index+len(v.Raw)] != v.Raw {
		return
	}
	if s.pieces == nil {
		s.pieces = map[messageKey][]piece{}
	}
	if _, ok := s.pieces[k]; !ok {
		s.keys = append(s.keys, k)
	}
	s.pieces[k] = append(s.pieces[k], piece{at: at, start: v.Index, end: v.Index + len(v.Raw), text: v.Str})
}

// edit is a piece's new text, as a JSON string, or its removal.
type edit struct {
	start, end int
	raw        []byte // nil: the piece is empty now
}

// redact redacts each message of s, and returns the edits by where their
// pieces are (at).
func (s *stream) redact(rs recordScrubber) map[int][]edit {
	var out map[int][]edit
	var texts []string
	for _, k := range s.keys {
		ps := s.pieces[k]
		texts = texts[:0]
		for _, p := range ps {
			texts = append(texts, p.text)
		}
		red, changed := rs.pieces(texts)
		if !changed {
			continue
		}
		for i, p := range ps {
			if red[i] == p.text {
				continue
			}
			if out == nil {
				out = map[int][]edit{}
			}
			e := edit{start: p.start, end: p.end}
			if red[i] != "" {
				e.raw, _ = json.Marshal(red[i])
			}
			out[p.at] = append(out[p.at], e)
		}
	}
	return out
}

// splice applies edits to s; an empty piece becomes "".
func splice(s string, edits []edit) string {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, e := range edits {
		b.WriteString(s[last:e.start])
		if e.raw == nil {
			b.WriteString(`""`)
		} else {
			b.Write(e.raw)
		}
		last = e.end
	}
	b.WriteString(s[last:])
	return b.String()
}

// scrubAnswer scrubs an LLM answer: a streamed one (server-sent events)
// message by message across its chunks, then whole, as any other.
func scrubAnswer(body string, rs recordScrubber) string {
	if !strings.Contains(body, "data:") {
		return rs.Scrub(body)
	}
	lines := strings.SplitAfter(body, "\n")
	var st stream
	for li, line := range lines {
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		// The chunk's values are found by their offsets in the line.
		js := strings.TrimLeft(line[len("data:"):], " \t")
		chunk := gjson.Parse(js)
		chunk.Index = len(line) - len(js)
		chunk.ForEach(func(k, v gjson.Result) bool {
			if k.Str == "choices" {
				v.ForEach(func(_, c gjson.Result) bool {
					answerChoice(&st, line, li, c)
					return true
				})
			}
			return true
		})
	}
	if edits := st.redact(rs); edits != nil {
		for li, es := range edits {
			lines[li] = splice(lines[li], es)
		}
		body = strings.Join(lines, "")
	}
	return rs.Scrub(body)
}

// answerChoice adds the pieces of one choice of a streamed chunk, line
// li of the answer.
func answerChoice(st *stream, line string, li int, c gjson.Result) {
	var choice int64
	var delta gjson.Result
	c.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "index":
			choice = v.Int()
		case "delta":
			delta = v
		}
		return true
	})
	delta.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content":
			st.add(messageKey{part: "content", choice: choice}, line, li, v)
		case "reasoning_content", "reasoning":
			st.add(messageKey{part: "reasoning", choice: choice}, line, li, v)
		case "tool_calls":
			var n int64
			v.ForEach(func(_, tc gjson.Result) bool {
				call, args := -1-n, gjson.Result{} // no index: the call's place
				n++
				tc.ForEach(func(k, v gjson.Result) bool {
					switch k.Str {
					case "index":
						call = v.Int()
					case "function":
						args = v.Get("arguments")
					}
					return true
				})
				st.add(messageKey{part: "call", choice: choice, call: call}, line, li, args)
				return true
			})
		}
		return true
	})
}

// eventKeys name an encoding's fields: the AG-UI encoding's (the run's
// events) or the server's own (eventData: the events a tool call or a
// session emitted).
type eventKeys struct{ typ, messageID, toolCallID, delta string }

var (
	agUIKeys = eventKeys{"type", "messageId", "toolCallId", "delta"}
	goKeys   = eventKeys{"Type", "MessageID", "ToolCallID", "Delta"}
)

// scrubEvents scrubs recorded events: the deltas of each streamed message
// across its events (an event left with no delta is dropped, as the
// replay, streaming the scrubbed answer, does not emit it), every other
// event whole. It returns a new slice when anything changed.
func scrubEvents(evs []json.RawMessage, rs recordScrubber, k eventKeys) []json.RawMessage {
	if len(evs) == 0 {
		return evs
	}
	var st stream
	out := slices.Clone(evs)
	for i, raw := range evs {
		js := string(raw)
		var typ, msgID, callID, delta gjson.Result
		gjson.Parse(js).ForEach(func(key, v gjson.Result) bool {
			switch key.Str {
			case k.typ:
				typ = v
			case k.messageID:
				msgID = v
			case k.toolCallID:
				callID = v
			case k.delta:
				delta = v
			}
			return true
		})
		switch t := events.Type(typ.Str); t {
		case events.TextMessageContent, events.ReasoningMessageContent:
			st.add(messageKey{part: string(t), id: msgID.Str}, js, i, delta)
		case events.ToolCallArgs:
			st.add(messageKey{part: string(t), id: callID.Str}, js, i, delta)
		default:
			if sc := rs.Scrub(js); sc != js {
				out[i] = nil // a redaction that broke the event drops it
				if json.Valid([]byte(sc)) {
					out[i] = json.RawMessage(sc)
				}
			}
		}
	}
	for i, es := range st.redact(rs) {
		if es[0].raw == nil {
			out[i] = nil
			continue
		}
		out[i] = json.RawMessage(splice(string(evs[i]), es))
	}
	// Events a scrub left empty, or unreadable, are dropped.
	return slices.DeleteFunc(out, func(e json.RawMessage) bool { return e == nil })
}
