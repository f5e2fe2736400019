package llmtest

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

func TestServerURL(t *testing.T) {
	srv := NewServer(t, Always(Reply("ok")))
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || !strings.HasSuffix(srv.URL, "/v1") {
		t.Errorf("URL %q, want http://127.0.0.1:PORT/v1", srv.URL)
	}
	if srv.LastRequest() != nil || len(srv.Requests()) != 0 {
		t.Error("requests recorded before any was sent")
	}
}

func TestRecordsRequestWithParams(t *testing.T) {
	srv := NewServer(t, Always(Reply("ok")))
	params := openai.ChatCompletionNewParams{
		Model:       testModel,
		Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are terse."),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is in "),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/cat.png"}),
				openai.TextContentPart("this picture?"),
			}),
			{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
				ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       "call_1",
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "describe", Arguments: `{"detail":"high"}`},
					},
				}},
			}},
			openai.ToolMessage("a cat", "call_1"),
		},
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
				Name:        "describe",
				Description: openai.String("Describe an image"),
				Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"detail": map[string]any{"type": "string"}}},
			}),
			openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "noop"}),
		},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	params.SetExtraFields(map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}})
	if got := streamChat(context.Background(), t, newClient(srv), params); got.err != nil {
		t.Fatal(got.err)
	}

	r := srv.LastRequest()
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test" {
		t.Errorf("path %q, authorization %q", r.Path, r.Header.Get("Authorization"))
	}
	if temp, ok := r.JSON["temperature"]; !ok || temp != 0.0 {
		t.Errorf("temperature: %v (present %v), want an explicit 0", temp, ok)
	}
	thinking, _ := r.JSON["thinking"].(map[string]any)
	if thinking["type"] != "enabled" || thinking["budget_tokens"] != 1024.0 {
		t.Errorf("extra field thinking = %v", r.JSON["thinking"])
	}
	if r.Model != testModel || !r.Stream || !r.IncludeUsage {
		t.Errorf("model %q stream %v include_usage %v", r.Model, r.Stream, r.IncludeUsage)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil || !reflect.DeepEqual(body, r.JSON) {
		t.Errorf("raw body does not match the decoded JSON: %v", err)
	}

	if len(r.Messages) != 4 {
		t.Fatalf("%d messages, want 4", len(r.Messages))
	}
	user := r.Messages[1]
	if user.Role != "user" || user.Content != "What is in this picture?" || len(user.ContentParts) != 3 || user.ContentParts[1]["type"] != "image_url" {
		t.Errorf("user message %+v", user)
	}
	wantCall := []ToolCall{{ID: "call_1", Name: "describe", Arguments: `{"detail":"high"}`}}
	if a := r.Messages[2]; a.Role != "assistant" || !reflect.DeepEqual(a.ToolCalls, wantCall) {
		t.Errorf("assistant message %+v", a)
	}
	if tm := r.Messages[3]; tm.Role != "tool" || tm.ToolCallID != "call_1" || tm.Content != "a cat" {
		t.Errorf("tool message %+v", tm)
	}

	if len(r.Tools) != 2 || r.Tools[0].Description != "Describe an image" {
		t.Fatalf("tools %+v", r.Tools)
	}
	var schema map[string]any
	if err := json.Unmarshal(r.Tools[0].Parameters, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("parameters %s (%v)", r.Tools[0].Parameters, err)
	}
	if !reflect.DeepEqual(r.ToolNames(), []string{"describe", "noop"}) {
		t.Errorf("tool names %v", r.ToolNames())
	}
	if r.Turn() != 1 || r.System() != "You are terse." || r.LastUserText() != "What is in this picture?" {
		t.Errorf("turn %d, system %q, last user %q", r.Turn(), r.System(), r.LastUserText())
	}
	if results := r.ToolResults(); len(results) != 1 || results[0].ToolCallID != "call_1" {
		t.Errorf("tool results %+v", results)
	}
}

func TestOmittedParamsAreAbsent(t *testing.T) {
	srv := NewServer(t, Always(Reply("ok")))
	if _, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("q")); err != nil {
		t.Fatal(err)
	}
	r := srv.LastRequest()
	for _, key := range []string{"temperature", "stream", "stream_options", "tools"} {
		if _, ok := r.JSON[key]; ok {
			t.Errorf("%q present though not sent: %s", key, r.Body)
		}
	}
	if r.Stream || r.IncludeUsage || r.Turn() != 0 {
		t.Errorf("stream %v include_usage %v turn %d", r.Stream, r.IncludeUsage, r.Turn())
	}
}

func TestRequestsIsACopyInArrivalOrder(t *testing.T) {
	srv := NewServer(t, Always(Reply("ok")))
	client := newClient(srv)
	for _, q := range []string{"first", "second", "third"} {
		if _, err := client.Chat.Completions.New(context.Background(), userParams(q)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].LastUserText() != "first" || reqs[2].LastUserText() != "third" {
		t.Fatalf("requests out of order or missing: %d", len(reqs))
	}
	reqs[0] = nil
	if srv.Requests()[0] == nil {
		t.Error("Requests returned the server's own slice")
	}
	if srv.LastRequest().LastUserText() != "third" {
		t.Errorf("LastRequest %q", srv.LastRequest().LastUserText())
	}
}

func TestRefusesMalformedRequests(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantStatus               int
		wantParam                any
	}{
		{"GET", http.MethodGet, "/chat/completions", "", http.StatusMethodNotAllowed, nil},
		{"wrong path", http.MethodPost, "/completions", `{"model":"m","messages":[]}`, http.StatusNotFound, nil},
		{"empty body", http.MethodPost, "/chat/completions", "", http.StatusBadRequest, nil},
		{"not JSON", http.MethodPost, "/chat/completions", "hello", http.StatusBadRequest, nil},
		{"JSON array", http.MethodPost, "/chat/completions", "[]", http.StatusBadRequest, nil},
		{"no model", http.MethodPost, "/chat/completions", `{"messages":[]}`, http.StatusBadRequest, "model"},
		{"no messages", http.MethodPost, "/chat/completions", `{"model":"m"}`, http.StatusBadRequest, "messages"},
		{"stream not a bool", http.MethodPost, "/chat/completions", `{"model":"m","messages":[],"stream":"yes"}`, http.StatusBadRequest, "stream"},
		{"content a number", http.MethodPost, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":3}]}`, http.StatusBadRequest, "messages[0].content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := NewServer(t, ScriptFunc(func(*Request) Response {
				t.Error("the script must not see a refused request")
				return Response{}
			}))
			resp, body := rawDo(t, tt.method, srv.URL+tt.path, "application/json", tt.body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			detail, _ := mustJSON(t, body)["error"].(map[string]any)
			if msg, _ := detail["message"].(string); !strings.HasPrefix(msg, "llmtest: ") {
				t.Errorf("error body %s", body)
			}
			if detail["param"] != tt.wantParam {
				t.Errorf("param %v, want %v", detail["param"], tt.wantParam)
			}
			if tt.wantStatus == http.StatusMethodNotAllowed && resp.Header.Get("Allow") != http.MethodPost {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
			if r := srv.LastRequest(); r == nil || r.Path != "/v1"+tt.path || string(r.Body) != tt.body {
				t.Errorf("refused request not recorded as sent: %+v", r)
			}
		})
	}
}

func TestRequestHelpers(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "rules"},
		{Role: "developer", Content: "more rules"},
		{Role: "user", Content: "first"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "a"}}},
		{Role: "tool", ToolCallID: "a", Content: "old result"},
		{Role: "user", Content: "second"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "b"}, {ID: "c"}}},
		{Role: "tool", ToolCallID: "b", Content: "B"},
		{Role: "tool", ToolCallID: "c", Content: "C"},
	}
	tests := []struct {
		name        string
		messages    []Message
		turn        int
		lastUser    string
		system      string
		toolResults []string
	}{
		{"empty", nil, 0, "", "", nil},
		{"first call", msgs[:3], 0, "first", "rules\nmore rules", nil},
		{"tool results after last assistant only", msgs, 2, "second", "rules\nmore rules", []string{"b", "c"}},
		{"no assistant yet but a stray tool message", []Message{{Role: "tool", ToolCallID: "z"}}, 0, "", "", []string{"z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Messages: tt.messages}
			var ids []string
			for _, m := range r.ToolResults() {
				ids = append(ids, m.ToolCallID)
			}
			if r.Turn() != tt.turn || r.LastUserText() != tt.lastUser || r.System() != tt.system || !reflect.DeepEqual(ids, tt.toolResults) {
				t.Errorf("turn %d last user %q system %q tool results %v", r.Turn(), r.LastUserText(), r.System(), ids)
			}
		})
	}
}
