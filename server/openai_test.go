package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/peers"
)

type oaiResult struct {
	Name       string           `json:"name"`
	Completion *oaiCompletion   `json:"completion"`
	Second     *oaiCompletion   `json:"second"`
	Chunks     []map[string]any `json:"chunks"`
	Models     []map[string]any `json:"models"`
	Attempts   []oaiResult      `json:"attempts"`
	Error      *struct {
		Class   string `json:"class"`
		Status  int    `json:"status"`
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

type oaiCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
		// Cost and Currency are ruleagent's, with a price table.
		Cost     *string `json:"cost"`
		Currency string  `json:"currency"`
	} `json:"usage"`
}

func (c *oaiCompletion) content() string {
	if c == nil || len(c.Choices) == 0 || c.Choices[0].Message.Content == nil {
		return ""
	}
	return *c.Choices[0].Message.Content
}

func (e *apiEnv) runOpenAI(scenarios ...map[string]any) map[string]oaiResult {
	e.t.Helper()
	return runOpenAIClient(e.t, e.base, e.opts.Token, scenarios...)
}

// runOpenAIClient runs the scenarios with the openai npm client against
// the server at base, and returns the results by name.
func runOpenAIClient(t *testing.T, base, token string, scenarios ...map[string]any) map[string]oaiResult {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"baseURL": base + "/v1", "apiKey": token, "scenarios": scenarios})
	out := peers.RunScript(t, "openai-client.mjs", in, 2*time.Minute)
	var results []oaiResult
	if err := json.Unmarshal(out, &results); err != nil {
		t.Fatalf("openai-client output: %v\n%.2000s", err, out)
	}
	byName := map[string]oaiResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	return byName
}

func TestOpenAIWithTheRealClient(t *testing.T) {
	e := newAPIEnv(t, Options{Token: "oai-token"})
	user := func(s string) []any { return []any{map[string]any{"role": "user", "content": s}} }
	confirm := []any{map[string]any{"type": "function", "function": map[string]any{"name": "confirm", "description": "Asks the person.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}}
	res := e.runOpenAI(
		map[string]any{"name": "stream", "kind": "stream", "model": "chat", "messages": user("hello")},
		map[string]any{"name": "create", "kind": "create", "model": "chat", "messages": user("hello")},
		map[string]any{"name": "activity", "kind": "stream", "model": "tools", "messages": user("lookup please")},
		map[string]any{"name": "quiet", "kind": "create", "model": "tools", "messages": user("lookup please"), "extra": map[string]any{"tool_activity": false}},
		map[string]any{"name": "tools", "kind": "tools", "model": "tools", "messages": user("confirm the order"), "tools": confirm, "toolResult": "yes"},
		map[string]any{"name": "models", "kind": "models"},
		map[string]any{"name": "unknown", "kind": "error", "model": "no-such-chain", "messages": user("hi")},
		map[string]any{"name": "failing", "kind": "error", "model": "broken", "messages": user("hi")},
	)

	s := res["stream"]
	if s.Error != nil || s.Completion.content() != "Hello! You said: hello" || s.Completion.Choices[0].FinishReason != "stop" ||
		s.Completion.Usage == nil || s.Completion.Usage.TotalTokens == 0 || s.Completion.Model != "chat" {
		t.Errorf("stream: %+v %+v", s.Error, s.Completion)
	}
	if n := len(s.Chunks); n < 3 || s.Chunks[n-1]["usage"] == nil || len(s.Chunks[n-1]["choices"].([]any)) != 0 {
		t.Errorf("stream chunks (the last one carrying usage): %v", s.Chunks)
	}
	c := res["create"]
	if c.Error != nil || c.Completion.content() != "Hello! You said: hello" || c.Completion.Usage == nil || c.Completion.Usage.PromptTokens == 0 {
		t.Errorf("create: %+v %+v", c.Error, c.Completion)
	}

	// The agent's own tool calls show as readable text by default, never as
	// tool_calls the client did not offer; they can be turned off.
	a := res["activity"]
	if a.Error != nil || !strings.Contains(a.Completion.content(), "> → lookup {\"key\":\"A-1\"}") ||
		!strings.Contains(a.Completion.content(), "> ✓ lookup (") || !strings.HasSuffix(a.Completion.content(), `Done: {"found":"A-1"}`) ||
		len(a.Completion.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("tool activity: %+v %q", a.Error, a.Completion.content())
	}
	q := res["quiet"]
	if q.Error != nil || q.Completion.content() != `Done: {"found":"A-1"}` {
		t.Errorf("tool activity off: %+v %q", q.Error, q.Completion.content())
	}

	// Client-offered tools come back as tool_calls; the next request with
	// their results continues the run.
	tc := res["tools"]
	if tc.Error != nil || tc.Completion.Choices[0].FinishReason != "tool_calls" || len(tc.Completion.Choices[0].Message.ToolCalls) != 1 ||
		tc.Completion.Choices[0].Message.ToolCalls[0].Function.Name != "confirm" {
		t.Fatalf("tool calls: %+v %+v", tc.Error, tc.Completion)
	}
	if tc.Second == nil || !strings.Contains(tc.Second.content(), "Done: yes") || tc.Second.Choices[0].FinishReason != "stop" {
		t.Errorf("continuation: %+v", tc.Second)
	}

	m := res["models"]
	ids := fmt.Sprint(m.Models)
	if m.Error != nil || !strings.Contains(ids, "id:chat") || !strings.Contains(ids, "id:tools") || strings.Contains(ids, "id:lookup") {
		t.Errorf("models: %+v %v", m.Error, m.Models)
	}

	// Errors take OpenAI's shape, so the SDK raises its usual exceptions.
	if u := res["unknown"]; u.Error == nil || u.Error.Class != "NotFoundError" || u.Error.Status != 404 || u.Error.Code != "model_not_found" {
		t.Errorf("unknown model: %+v", u.Error)
	}
	if f := res["failing"]; f.Error == nil || f.Error.Status != 502 || !strings.Contains(f.Error.Message, "the model refuses this request") {
		t.Errorf("failing chain: %+v", f.Error)
	}

	// Without the token: the SDK's AuthenticationError.
	bad := *e
	bad.opts.Token = "wrong"
	if r := bad.runOpenAI(map[string]any{"name": "auth", "kind": "error", "model": "chat", "messages": user("hi")})["auth"]; r.Error == nil || r.Error.Class != "AuthenticationError" {
		t.Errorf("wrong token: %+v", r.Error)
	}
}
