package components

import (
	"context"
	"testing"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

// A session keeps each assistant message's reasoning, and a later run
// sends it back to the model where params.reasoningEcho asks for it: here
// on the message that called a tool, not on the final answer.
func TestSessionReasoningGoesBackToTheModel(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if r.Messages[len(r.Messages)-1].Role == "tool" {
			return llmtest.Response{Text: "answer", Reasoning: "wrap up"}
		}
		return llmtest.Response{Reasoning: "I need the file", ToolCalls: []llmtest.ToolCall{llmtest.Call("lookup", `{}`)}}
	}))
	id, dsl := agentChain(t, srv.URL, map[string]any{
		"session": map[string]any{"scope": "thread"},
		"params":  map[string]any{"reasoningEcho": "toolCalls"},
	})
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(sessionConfig(sessions.NewMemory())))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	for _, text := range []string{"first", "second"} {
		oneTerminal(t, send(t, context.Background(), e, text, map[string]string{"threadId": "t"}, false), types.Success)
	}
	var sent []map[string]any
	for _, r := range srv.Requests() {
		if msgs, _ := r.JSON["messages"].([]any); len(msgs) > len(sent) {
			sent = sent[:0]
			for _, m := range msgs {
				sent = append(sent, m.(map[string]any))
			}
		}
	}
	// system, first, assistant(tool call), tool, assistant(answer), second, assistant(tool call), tool
	if len(sent) != 8 {
		t.Fatalf("longest request has %d messages: %v", len(sent), sent)
	}
	if got := sent[2]["reasoning_content"]; got != "I need the file" {
		t.Errorf("stored tool-call message: reasoning_content %v", got)
	}
	if _, ok := sent[4]["reasoning_content"]; ok || sent[4]["content"] != "answer" {
		t.Errorf("stored final answer: %v", sent[4])
	}
	if got := sent[6]["reasoning_content"]; got != "I need the file" {
		t.Errorf("this run's tool-call message: reasoning_content %v", got)
	}
}
