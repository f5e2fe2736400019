package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

func ptr[T any](v T) *T { return &v }

func TestParamsOnTheWire(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok")))
	params := &Params{Temperature: ptr(0.0), TopP: ptr(0.5), MaxTokens: ptr(64), Stop: []string{"END"},
		PresencePenalty: ptr(0.0), FrequencyPenalty: ptr(0.25), Seed: ptr(int64(7)),
		ExtraFields: map[string]any{"thinking.type": "enabled", "thinking.budget_tokens": 512, "top_k": 5, "stream_options.include_obfuscation": false}}
	c, err := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Key: "sk-k", Model: "m", Params: params}}, Headers: map[string]string{"X-Team": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{true, false} {
		if _, err := c.Complete(context.Background(), &Request{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}, stream, DiscardDeltas, nil); err != nil {
			t.Fatal(err)
		}
		j := srv.LastRequest().JSON
		checks := map[string]any{"temperature": 0.0, "top_p": 0.5, "max_tokens": 64.0, "presence_penalty": 0.0, "frequency_penalty": 0.25, "seed": 7.0, "top_k": 5.0}
		for k, v := range checks {
			if j[k] != v {
				t.Errorf("stream=%v %s = %v, want %v", stream, k, j[k], v)
			}
		}
		th, _ := j["thinking"].(map[string]any)
		if th["type"] != "enabled" || th["budget_tokens"] != 512.0 {
			t.Errorf("dotted extra fields not nested: %v", j["thinking"])
		}
		if stream {
			so, _ := j["stream_options"].(map[string]any)
			if so["include_usage"] != true || so["include_obfuscation"] != false {
				t.Errorf("stream_options merged wrongly: %v", so)
			}
		}
		if srv.LastRequest().Header.Get("X-Team") != "a" || srv.LastRequest().Header.Get("Authorization") != "Bearer sk-k" {
			t.Errorf("headers %v", srv.LastRequest().Header)
		}
	}
	// Unset parameters are not sent.
	c2, _ := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m"}}})
	_, _ = c2.Complete(context.Background(), &Request{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}, false, DiscardDeltas, nil)
	for _, k := range []string{"temperature", "top_p", "max_tokens", "stop", "seed", "presence_penalty"} {
		if _, ok := srv.LastRequest().JSON[k]; ok {
			t.Errorf("%s sent although unset", k)
		}
	}
	if h := srv.LastRequest().Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}

func TestEnvironmentDoesNotLeak(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok")))
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	c, _ := NewClient(LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Model: "m"}}})
	if _, err := c.Complete(context.Background(), &Request{Messages: []events.Message{{Role: events.RoleUser, Content: "hi"}}}, true, DiscardDeltas, nil); err != nil {
		t.Fatalf("the client used the environment's base URL: %v", err)
	}
	h := srv.LastRequest().Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Fatalf("environment leaked into headers: %v", h)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []LLMConfig{
		{},
		{Endpoints: []Endpoint{{URL: "api.openai.com", Model: "m"}}},
		{Endpoints: []Endpoint{{URL: "http://x", Model: ""}}},
		{Endpoints: []Endpoint{{URL: "http://x", Model: "m", Params: &Params{ExtraFields: map[string]any{"a..b": 1}}}}},
		{Endpoints: []Endpoint{{URL: "http://x", Model: "m"}}, MaxRetries: -1},
	} {
		if _, err := NewClient(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}

// TestChunkDecoderMatchesOpenAIGo streams scripted answers and decodes each
// one twice: with our gjson decoder, and with openai-go's own types and
// accumulator. The turns must agree.
func TestChunkDecoderMatchesOpenAIGo(t *testing.T) {
	answers := []llmtest.Response{
		{Text: "Plain text, with \"quotes\", \\backslashes\\, unicode 雪 and emoji 🙂.", ChunkSize: 3},
		{Reasoning: "thinking hard", Text: "answer", ChunkSize: 2},
		{ToolCalls: []llmtest.ToolCall{llmtest.Call("read", `{"path":"a.txt"}`), llmtest.Call("bash", `{"command":"ls -la | wc -l"}`)}, ChunkSize: 4},
		{Text: "preamble", ToolCalls: []llmtest.ToolCall{llmtest.Call("x", `{}`)}},
	}
	for i, a := range answers {
		srv := llmtest.NewServer(t, llmtest.Always(a))
		raw, err := httpPost(srv.URL+"/chat/completions", []byte(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		acc := &accumulator{d: DiscardDeltas}
		if err := acc.readStream(bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		ours := &acc.turn
		theirs := decodeWithOpenAIGo(t, raw)
		if ours.Content != theirs.Content || ours.FinishReason != theirs.FinishReason || ours.Usage != theirs.Usage || len(ours.ToolCalls) != len(theirs.ToolCalls) {
			t.Fatalf("answer %d:\n ours   %+v\n theirs %+v", i, ours, theirs)
		}
		for j := range ours.ToolCalls {
			if ours.ToolCalls[j] != theirs.ToolCalls[j] {
				t.Fatalf("answer %d call %d: %+v vs %+v", i, j, ours.ToolCalls[j], theirs.ToolCalls[j])
			}
		}
		if a.Reasoning != "" && ours.Reasoning != a.Reasoning {
			t.Fatalf("reasoning %q", ours.Reasoning)
		}
	}
}

// decodeWithOpenAIGo decodes a raw SSE answer with openai-go's chunk type
// and accumulator.
func decodeWithOpenAIGo(t *testing.T, resp []byte) *Turn {
	t.Helper()
	var acc openai.ChatCompletionAccumulator
	sc := bufio.NewScanner(bytes.NewReader(resp))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatal(err)
		}
		acc.AddChunk(chunk)
	}
	turn := &Turn{Content: acc.Choices[0].Message.Content, FinishReason: acc.Choices[0].FinishReason}
	u := acc.Usage
	turn.Usage.PromptTokens, turn.Usage.CompletionTokens, turn.Usage.TotalTokens = u.PromptTokens, u.CompletionTokens, u.TotalTokens
	turn.Usage.CachedTokens, turn.Usage.ReasoningTokens = u.PromptTokensDetails.CachedTokens, u.CompletionTokensDetails.ReasoningTokens
	for _, tc := range acc.Choices[0].Message.ToolCalls {
		turn.ToolCalls = append(turn.ToolCalls, events.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return turn
}

func httpPost(url string, body []byte) ([]byte, error) {
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
