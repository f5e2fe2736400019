package components

import (
	"context"
	"strings"
	"testing"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// Preset messages turn an incoming event (an HTTP endpoint's JSON, say)
// into the conversation, filled in from the message; a chat request keeps
// its own conversation.
func TestPresetMessages(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok")))
	id, dsl := agentChain(t, srv.URL, map[string]any{"messages": []any{
		map[string]any{"role": "system", "content": "Orders are in region ${metadata.region}."},
		map[string]any{"role": "user", "content": "Check order ${msg.orderId} (${msg.items} items)."},
	}})
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())

	oneTerminal(t, send(t, context.Background(), e, `{"orderId":"A-7","items":3}`, map[string]string{"region": "EU", "userName": "Ann"}, false), types.Success)
	got := srv.LastRequest().Messages
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Role+": "+m.Content)
	}
	want := []string{"system: You help Ann.", "system: Orders are in region EU.", "user: Check order A-7 (3 items)."}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent:\n%s\nwant:\n%s", strings.Join(texts, "\n"), strings.Join(want, "\n"))
	}

	// A chat request is its own conversation.
	oneTerminal(t, send(t, context.Background(), e, `{"message":"hello"}`, nil, false), types.Success)
	if m := srv.LastRequest().Messages; len(m) != 2 || m[1].Content != "hello" {
		t.Errorf("chat request: %+v", m)
	}
}

func TestPresetMessagesConfigErrors(t *testing.T) {
	for _, c := range []struct {
		messages []any
		field    string
	}{
		{[]any{map[string]any{"role": "tool", "content": "x"}}, "messages[0].role"},
		{[]any{map[string]any{"role": "user"}}, "messages[0].content: missing"},
		{[]any{map[string]any{"role": "user", "content": "x", "name": "n"}}, `messages[0].name: unknown field`},
		{[]any{map[string]any{"role": "user", "content": "x"}, map[string]any{"role": "assistant", "content": "y"}}, "messages[1].role: the last preset message must be the user's"},
	} {
		id, dsl := agentChain(t, "http://127.0.0.1:1/v1", map[string]any{"messages": c.messages})
		if _, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: err %v, want it to name %q", c.messages, err, c.field)
		}
		ps := Validate([]ChainFile{{Path: "a.json", DSL: dsl}}, nil, Options{})
		if len(ps) == 0 || !strings.Contains(ps[0].Error(), "configuration."+strings.SplitN(c.field, ":", 2)[0]) {
			t.Errorf("%v: validate says %v", c.messages, ps)
		}
	}
}

// With params.responseFormat asking for JSON, a JSON answer leaves the
// node as JSON data, so the next node reads its fields.
func TestJSONAnswersLeaveAsJSON(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply(`{"status":"shipped"}`)))
	for _, tc := range []struct {
		params map[string]any
		want   types.DataType
	}{
		{map[string]any{"responseFormat": map[string]any{"name": "order", "schema": map[string]any{"type": "object"}}}, types.JSON},
		{map[string]any{"responseFormat": "json_object"}, types.JSON},
		{nil, types.TEXT},
	} {
		id, dsl := agentChain(t, srv.URL, map[string]any{"params": tc.params})
		e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
		if err != nil {
			t.Fatal(err)
		}
		end := oneTerminal(t, send(t, context.Background(), e, "status?", nil, false), types.Success)
		if end.msg.DataType != tc.want || end.msg.GetData() != `{"status":"shipped"}` {
			t.Errorf("%v: %s %q", tc.params, end.msg.DataType, end.msg.GetData())
		}
		e.Stop(context.Background())
	}
	id, dsl := agentChain(t, srv.URL, map[string]any{"params": map[string]any{"responseFormat": "yaml"}})
	if _, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err == nil || !strings.Contains(err.Error(), "params.responseFormat") {
		t.Errorf("a bad responseFormat: %v", err)
	}
	// ruleagent validate finds it without an LLM configured.
	_, dsl = agentChain(t, "${global.llm_url}", map[string]any{"params": map[string]any{"reasoningEcho": "often"}})
	if ps := Validate([]ChainFile{{Path: "a.json", DSL: dsl}}, nil, Options{}); len(ps) == 0 || !strings.Contains(ps[0].Error(), "configuration.params.reasoningEcho") {
		t.Errorf("validate: %v", ps)
	}
}
