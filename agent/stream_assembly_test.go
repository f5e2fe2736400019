package agent

import (
	"context"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// frame is one streamed chunk carrying the given delta JSON.
func frame(delta string) string {
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
}

func finishFrame(reason string) string {
	return `{"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`
}

// The provider streams the second call (index 1) before the first call's
// id arrives: each call's result must still come back under its own id.
// Matching by arrival order reported 3 under call_b and 30 under call_a.
func TestStreamedCallsAreKeyedByIndexNotArrival(t *testing.T) {
	frames := []string{
		frame(`{"role":"assistant","tool_calls":[{"index":0,"type":"function","function":{"name":"add","arguments":"{\"a\":1,"}}]}`),
		frame(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"add","arguments":"{\"a\":10,\"b\":20}"}}]}`),
		frame(`{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":"\"b\":2}"}}]}`),
		finishFrame("tool_calls"),
	}
	h := newHarness(t, llmtest.Sequence(llmtest.Response{Frames: frames}, llmtest.Reply("3 and 30")))
	h.tools = []string{"add"}
	_, rec, err := h.run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult {
			results[e.ToolCallID] = e.Content
		}
	}
	if results["call_a"] != "3" || results["call_b"] != "30" {
		t.Fatalf("results by call id: %v, want call_a 3, call_b 30", results)
	}
	// The model reads each result under the id of the call that made it.
	conv := h.srv.LastRequest().Messages
	args, res := map[string]string{}, map[string]string{}
	for _, m := range conv {
		for _, tc := range m.ToolCalls {
			args[tc.ID] = tc.Arguments
		}
		if m.Role == "tool" {
			res[m.ToolCallID] = m.Content
		}
	}
	if args["call_a"] != `{"a":1,"b":2}` || args["call_b"] != `{"a":10,"b":20}` || res["call_a"] != "3" || res["call_b"] != "30" {
		t.Fatalf("conversation: calls %v, results %v", args, res)
	}
}
