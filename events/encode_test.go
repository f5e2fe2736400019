package events

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppendJSONShapes(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Type: RunStarted, Timestamp: 5, ThreadID: "t", RunID: "r"}, `{"type":"RUN_STARTED","timestamp":5,"threadId":"t","runId":"r"}`},
		{Event{Type: RunFinished, ThreadID: "t", RunID: "r", Result: json.RawMessage(`"ok"`), Usage: []TokenUsage{{Model: "m", InputTokens: 3, OutputTokens: 4, TotalTokens: 7}}},
			`{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":"ok","usage":[{"model":"m","inputTokens":3,"outputTokens":4,"totalTokens":7}]}`},
		{Event{Type: RunFinished, ThreadID: "t", RunID: "r", Outcome: "cancelled"}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"cancelled"}}`},
		{Event{Type: RunError, Message: "boom"}, `{"type":"RUN_ERROR","message":"boom"}`},
		{Event{Type: TextMessageContent, MessageID: "m", Delta: ""}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":""}`},
		{Event{Type: TextMessageStart, MessageID: "m", Role: "assistant"}, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`},
		{Event{Type: ReasoningMessageStart, MessageID: "m"}, `{"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}`},
		{Event{Type: ToolCallStart, ToolCallID: "c", ToolCallName: "read"}, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"read"}`},
		{Event{Type: ToolCallResult, MessageID: "m", ToolCallID: "c", Content: "x", Meta: Meta{ToolType: "builtin", DurationMs: 3, IsError: true}},
			`{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"x","role":"tool","metadata":{"toolType":"builtin","durationMs":3,"isError":true}}`},
		{Event{Type: SubagentStarted, SubagentRunID: "s", Name: "rev", ParentToolCallID: "c"}, `{"type":"SUBAGENT_STARTED","name":"rev","parentToolCallId":"c","subagentRunId":"s"}`},
		{Event{Type: TextMessageEnd, MessageID: "m", SubagentRunID: "s"}, `{"type":"TEXT_MESSAGE_END","messageId":"m","subagentRunId":"s"}`},
		{Event{Type: SubagentFinished, SubagentRunID: "s", Outcome: OutcomeSuspended, Interrupts: []Interrupt{{ID: "i1"}, {ID: "i2"}}},
			`{"type":"SUBAGENT_FINISHED","outcome":{"type":"suspended","interruptIds":["i1","i2"]},"subagentRunId":"s"}`},
		{Event{Type: SubagentFinished, SubagentRunID: "s", Outcome: OutcomeSuspended}, `{"type":"SUBAGENT_FINISHED","outcome":{"type":"suspended"},"subagentRunId":"s"}`},
		{Event{Type: Custom, Name: "n"}, `{"type":"CUSTOM","name":"n","value":{}}`},
		{Event{Type: StepStarted, StepName: "turn 1", Meta: Meta{Step: 1}}, `{"type":"STEP_STARTED","stepName":"turn 1","metadata":{"step":1}}`},
		{Event{Type: ActivitySnapshot, MessageID: "a", ActivityType: "mcp_progress", Activity: json.RawMessage(`{"progress":1}`), Meta: Meta{ToolCallID: "c"}},
			`{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"mcp_progress","content":{"progress":1},"metadata":{"toolCallId":"c"}}`},
		{Event{Type: ActivitySnapshot, MessageID: "a", ActivityType: "plan"}, `{"type":"ACTIVITY_SNAPSHOT","messageId":"a","activityType":"plan","content":{}}`},
		{Event{Type: ActivityDelta, MessageID: "a", ActivityType: "mcp_progress", Patch: json.RawMessage(`[{"op":"replace","path":"/progress","value":2}]`), SubagentRunID: "s"},
			`{"type":"ACTIVITY_DELTA","messageId":"a","activityType":"mcp_progress","patch":[{"op":"replace","path":"/progress","value":2}],"subagentRunId":"s"}`},
		{Event{Type: ActivityDelta, MessageID: "a", ActivityType: "plan"}, `{"type":"ACTIVITY_DELTA","messageId":"a","activityType":"plan","patch":[]}`},
	}
	for _, c := range cases {
		got := string(c.ev.AppendJSON(nil))
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.ev.Type, got, c.want)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got), &m); err != nil {
			t.Errorf("%s: invalid JSON: %v", c.ev.Type, err)
		}
		for k, v := range m {
			if v == nil {
				t.Errorf("%s: field %s is null", c.ev.Type, k)
			}
		}
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\"back\\slash", "ctl\x00\x01\x1f", "bad\xff\xfeutf8", "\u2028\u2029", "emoji 🙂", "<script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("invalid JSON %q for %q: %v", b, s, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if !utf8.ValidString(s) {
			// Each invalid byte becomes one U+FFFD; ToValidUTF8 merges runs.
			want = ""
			for i := 0; i < len(s); {
				r, n := utf8.DecodeRuneInString(s[i:])
				want += string(r)
				i += n
			}
		}
		if got != want {
			t.Fatalf("round trip: got %q want %q", got, want)
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	ev := Event{Type: TextMessageContent, Timestamp: 1700000000000, MessageID: "msg-123", Delta: "Hello, world. This is a chunk."}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = ev.AppendJSON(buf[:0])
	}
}
