package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// streamedAs is an answer streamed in chunks as the record keeps it: its
// SSE body, and the events the run emitted for it (one per chunk).
func streamedAs(chunks []string) (string, []json.RawMessage) {
	var body strings.Builder
	var evs []json.RawMessage
	for _, c := range chunks {
		body.WriteString("data: " + deltaFrame(map[string]any{"content": c}) + "\n\n")
		ev := events.Event{Type: events.TextMessageContent, MessageID: "m-1", Delta: c}
		evs = append(evs, ev.AppendJSON(nil))
	}
	body.WriteString("data: [DONE]\n\n")
	return body.String(), evs
}

// TestRecordScrubAtEverySplit: a registered secret and a token, each cut
// into 2 and 3 chunks at every position, leave no 6 bytes of themselves in
// the recorded answer or its events; the answer's chunks and the events'
// deltas are cut alike (each non-empty chunk is the next event's delta:
// what a replay, streaming the answer, emits), and joined they say
// [REDACTED] where the secret was.
func TestRecordScrubAtEverySplit(t *testing.T) {
	sc := scrub.New().Child()
	sc.AddSecrets(splitKey)
	rs := recordScrubber{}.add(tools.Scrubber(sc))
	for _, secret := range []string{splitKey, splitToken} {
		text := "A " + secret + " B"
		want := "A " + scrub.Redacted + " B"
		var cases [][]string
		for i := 2; i < len(text)-2; i++ {
			cases = append(cases, cut(text, i))
			for j := i + 1; j < len(text)-2; j += 3 {
				cases = append(cases, cut(text, i, j))
			}
		}
		for _, chunks := range cases {
			body, evs := streamedAs(chunks)
			gotBody := scrubAnswer(body, rs)
			gotEvs := scrubEvents(evs, rs, agUIKeys)
			all := gotBody + string(joinRaw(gotEvs))
			for i := 0; i+6 <= len(secret); i++ {
				if strings.Contains(all, secret[i:i+6]) {
					t.Fatalf("%q: %q survived:\n%s", chunks, secret[i:i+6], all)
				}
			}
			var wire []string
			for line := range strings.Lines(gotBody) {
				if d, ok := strings.CutPrefix(line, "data: "); ok && gjson.Valid(d) {
					if c := gjson.Get(d, "choices.0.delta.content").Str; c != "" {
						wire = append(wire, c)
					}
				}
			}
			var deltas []string
			for _, e := range gotEvs {
				deltas = append(deltas, gjson.GetBytes(e, "delta").Str)
			}
			if strings.Join(wire, "|") != strings.Join(deltas, "|") || strings.Join(deltas, "") != want {
				t.Fatalf("%q: the answer streams %q, the events say %q; want %q", chunks, wire, deltas, want)
			}
		}
	}
}

// TestRecordScrubsToolArgumentFragments: a call's arguments streamed in
// fragments are scrubbed joined, keyed by the call's index (two calls
// interleaved), in the answer and in TOOL_CALL_ARGS alike.
func TestRecordScrubsToolArgumentFragments(t *testing.T) {
	args := `{"key":"` + splitToken + `"}`
	frag := cut(args, 12, 30)
	frames := []string{
		deltaFrame(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "a", "function": map[string]any{"name": "f", "arguments": frag[0]}}}}),
		deltaFrame(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "id": "b", "function": map[string]any{"name": "f", "arguments": `{"k":"`}}}}),
		deltaFrame(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": frag[1]}}}}),
		deltaFrame(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "function": map[string]any{"arguments": `v"}`}}}}),
		deltaFrame(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": frag[2]}}}}),
	}
	body := "data: " + strings.Join(frames, "\n\ndata: ") + "\n\n"
	got := scrubAnswer(body, nil)
	var a, b strings.Builder
	for line := range strings.Lines(got) {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			tc := gjson.Get(d, "choices.0.delta.tool_calls.0")
			if tc.Get("index").Int() == 0 {
				a.WriteString(tc.Get("function.arguments").Str)
			} else {
				b.WriteString(tc.Get("function.arguments").Str)
			}
		}
	}
	if a.String() != `{"key":"`+scrub.Redacted+`"}` || b.String() != `{"k":"v"}` {
		t.Fatalf("the calls' arguments: %q and %q\n%s", a.String(), b.String(), got)
	}
	var evs []json.RawMessage
	for _, f := range frag {
		e := events.Event{Type: events.ToolCallArgs, ToolCallID: "a", Delta: f}
		evs = append(evs, e.AppendJSON(nil))
	}
	var deltas strings.Builder
	for _, e := range scrubEvents(evs, nil, agUIKeys) {
		deltas.WriteString(gjson.GetBytes(e, "delta").Str)
	}
	if deltas.String() != a.String() {
		t.Fatalf("TOOL_CALL_ARGS say %q, the answer %q", deltas.String(), a.String())
	}
}

func joinRaw(evs []json.RawMessage) []byte {
	var b []byte
	for _, e := range evs {
		b = append(b, e...)
	}
	return b
}
