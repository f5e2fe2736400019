package llmtest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/option"
)

func TestCompletionText(t *testing.T) {
	srv := NewServer(t, Always(Reply("Hello there")))
	got, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Created == 0 {
		t.Errorf("envelope: object %q, id %q, created %d", got.Object, got.ID, got.Created)
	}
	if got.Model != testModel {
		t.Errorf("model %q, want the request's %q", got.Model, testModel)
	}
	if len(got.Choices) != 1 {
		t.Fatalf("%d choices, want 1", len(got.Choices))
	}
	choice := got.Choices[0]
	if choice.Message.Content != "Hello there" || choice.Message.Role != "assistant" {
		t.Errorf("message %+v", choice.Message)
	}
	if choice.FinishReason != "stop" {
		t.Errorf("finish_reason %q, want stop", choice.FinishReason)
	}
	if len(choice.Message.ToolCalls) != 0 {
		t.Errorf("unexpected tool calls %+v", choice.Message.ToolCalls)
	}
	if _, ok := choice.Message.JSON.ExtraFields["reasoning_content"]; ok {
		t.Errorf("reasoning_content sent without Reasoning: %s", choice.Message.RawJSON())
	}
	u := got.Usage
	if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("default usage %+v: want non-zero counts that add up", u)
	}
}

func TestCompletionReasoning(t *testing.T) {
	srv := NewServer(t, Always(Response{Reasoning: "The user greets me.", Text: "Hi!"}))
	got, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("hi"))
	if err != nil {
		t.Fatal(err)
	}
	field, ok := got.Choices[0].Message.JSON.ExtraFields["reasoning_content"]
	if !ok {
		t.Fatalf("no reasoning_content in %s", got.Choices[0].Message.RawJSON())
	}
	var reasoning string
	if err := json.Unmarshal([]byte(field.Raw()), &reasoning); err != nil || reasoning != "The user greets me." {
		t.Errorf("reasoning_content %s (%v)", field.Raw(), err)
	}
	if got.Choices[0].Message.Content != "Hi!" {
		t.Errorf("content %q", got.Choices[0].Message.Content)
	}
	if got.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
		t.Errorf("reasoning tokens not counted: %+v", got.Usage)
	}
}

func TestCompletionParallelToolCalls(t *testing.T) {
	srv := NewServer(t, Always(Calls(
		Call("get_weather", `{"city":"Paris"}`),
		ToolCall{ID: "call_fixed", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	)))
	client := newClient(srv)
	got, err := client.Chat.Completions.New(context.Background(), userParams("weather and time?"))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason %q, want tool_calls", got.Choices[0].FinishReason)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(msg.RawJSON()), &raw); err != nil {
		t.Fatal(err)
	}
	if content, present := raw["content"]; !present || content != nil {
		t.Errorf("content must be null with only tool calls: %s", msg.RawJSON())
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("%d tool calls, want 2: %s", len(msg.ToolCalls), msg.RawJSON())
	}
	first, second := msg.ToolCalls[0], msg.ToolCalls[1]
	if !strings.HasPrefix(first.ID, "call_") || first.Type != "function" || first.Function.Name != "get_weather" || first.Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("first call %+v", first)
	}
	if second.ID != "call_fixed" || second.Function.Name != "get_time" || second.Function.Arguments != `{"tz":"Europe/Paris"}` {
		t.Errorf("second call %+v", second)
	}

	again, err := client.Chat.Completions.New(context.Background(), userParams("weather and time?"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Choices[0].Message.ToolCalls[0].ID == first.ID {
		t.Errorf("generated tool call id %q repeated across answers", first.ID)
	}
	if again.ID == got.ID {
		t.Errorf("completion id %q repeated across answers", got.ID)
	}
}

func TestCompletionTextWithToolCalls(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "Let me check.", ToolCalls: []ToolCall{Call("lookup", `{}`)}}))
	got, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("q"))
	if err != nil {
		t.Fatal(err)
	}
	msg := got.Choices[0].Message
	if msg.Content != "Let me check." || len(msg.ToolCalls) != 1 || got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("got %s, finish %q", msg.RawJSON(), got.Choices[0].FinishReason)
	}
}

func TestCompletionOverrides(t *testing.T) {
	srv := NewServer(t, Always(Response{
		Text:         "cut short",
		Model:        "served-model",
		FinishReason: "length",
		Usage:        &Usage{PromptTokens: 10, CompletionTokens: 5, CachedTokens: 3, ReasoningTokens: 2},
		Headers:      map[string]string{"X-Request-Id": "req-42"},
	}))
	var httpResp *http.Response
	got, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("q"), option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if got.Model != "served-model" || got.Choices[0].FinishReason != "length" {
		t.Errorf("model %q finish %q", got.Model, got.Choices[0].FinishReason)
	}
	u := got.Usage
	if u.PromptTokens != 10 || u.CompletionTokens != 5 || u.TotalTokens != 15 ||
		u.PromptTokensDetails.CachedTokens != 3 || u.CompletionTokensDetails.ReasoningTokens != 2 {
		t.Errorf("usage %+v", u)
	}
	if h := httpResp.Header.Get("X-Request-Id"); h != "req-42" {
		t.Errorf("X-Request-Id header %q", h)
	}
}

func TestCompletionEmptyAnswerHasEmptyContent(t *testing.T) {
	srv := NewServer(t, Always(Response{}))
	got, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("q"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Choices[0].Message.RawJSON(), `"content":""`) || got.Choices[0].FinishReason != "stop" {
		t.Errorf("empty answer: %s finish %q", got.Choices[0].Message.RawJSON(), got.Choices[0].FinishReason)
	}
}
