package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestReasoningEcho checks which earlier assistant messages carry their
// reasoning back as reasoning_content, for each setting.
func TestReasoningEcho(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok")))
	history := []events.Message{
		{Role: events.RoleUser, Content: "hi"},
		{Role: events.RoleAssistant, Reasoning: "look it up", ToolCalls: []events.ToolCall{{ID: "c1", Name: "read", Arguments: `{}`}}},
		{Role: events.RoleTool, ToolCallID: "c1", Content: "data"},
		{Role: events.RoleAssistant, Content: "done", Reasoning: "summarise"},
		{Role: events.RoleUser, Content: "again"},
	}
	for _, tc := range []struct {
		echo string
		want [2]string // reasoning_content of message 1 (tool calls) and 3 (text)
	}{
		{"", [2]string{"", ""}},
		{"none", [2]string{"", ""}},
		{"toolCalls", [2]string{"look it up", ""}},
		{"all", [2]string{"look it up", "summarise"}},
	} {
		c, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m", Params: &Params{ReasoningEcho: tc.echo}}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []bool{true, false} {
			if _, err := c.Complete(context.Background(), &Request{Messages: history}, stream, DiscardDeltas, nil); err != nil {
				t.Fatal(err)
			}
			msgs, _ := srv.LastRequest().JSON["messages"].([]any)
			if len(msgs) != len(history) {
				t.Fatalf("echo=%q: %d messages sent", tc.echo, len(msgs))
			}
			for i, idx := range []int{1, 3} {
				m := msgs[idx].(map[string]any)
				got, present := m["reasoning_content"]
				if tc.want[i] == "" && present {
					t.Errorf("echo=%q stream=%v: message %d carries reasoning_content %v", tc.echo, stream, idx, got)
				}
				if tc.want[i] != "" && got != tc.want[i] {
					t.Errorf("echo=%q stream=%v: message %d reasoning_content = %v, want %q", tc.echo, stream, idx, got, tc.want[i])
				}
			}
			for _, idx := range []int{0, 2, 4} {
				if _, present := msgs[idx].(map[string]any)["reasoning_content"]; present {
					t.Errorf("echo=%q: non-assistant message %d carries reasoning_content", tc.echo, idx)
				}
			}
		}
	}
	_, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m", Params: &Params{ReasoningEcho: "sometimes"}}}})
	if err == nil || !strings.Contains(err.Error(), "params.reasoningEcho") {
		t.Fatalf("bad reasoningEcho accepted: %v", err)
	}
}

// params.responseFormat is sent as response_format, in each of its forms;
// a wrong one is a config error naming the field.
func TestResponseFormat(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply(`{"ok":true}`)))
	for _, tc := range []struct {
		format, want string
		isJSON       bool
	}{
		{`"text"`, `{"type":"text"}`, false},
		{`"json_object"`, `{"type":"json_object"}`, true},
		{`{"name":"order","schema":{"type":"object"},"strict":true}`, `{"json_schema":{"name":"order","schema":{"type":"object"},"strict":true},"type":"json_schema"}`, true},
	} {
		p := &Params{ResponseFormat: []byte(tc.format)}
		c, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m", Params: p}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(context.Background(), &Request{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}, true, DiscardDeltas, nil); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(srv.LastRequest().JSON["response_format"])
		if string(got) != tc.want || p.JSONAnswers() != tc.isJSON {
			t.Errorf("%s: sent %s (JSON answers %v), want %s (%v)", tc.format, got, p.JSONAnswers(), tc.want, tc.isJSON)
		}
	}
	for _, bad := range []string{`"yaml"`, `{"schema":{}}`, `{"name":"x","schema":"y"}`, `3`} {
		_, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m", Params: &Params{ResponseFormat: []byte(bad)}}}})
		if err == nil || !strings.Contains(err.Error(), "params.responseFormat") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
