package llmtest

import (
	"bytes"
	"strings"
	"testing"
)

// The SDK tolerates details that stricter clients (the JS SDK, other
// languages) do not, so the exact frames are checked here as raw bytes.

// sseFrames splits an event stream into its data payloads, failing on
// anything but `data: ...\n\n` frames.
func sseFrames(t *testing.T, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var frames []string
	for _, frame := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		payload, ok := strings.CutPrefix(frame, "data: ")
		if !ok || strings.Contains(payload, "\n") {
			t.Fatalf("malformed frame %q", frame)
		}
		frames = append(frames, payload)
	}
	return frames
}

func TestStreamWireFormat(t *testing.T) {
	srv := NewServer(t, Always(Response{
		Text:      "Hi",
		Reasoning: "hm",
		ToolCalls: []ToolCall{{ID: "call_a", Name: "alpha", Arguments: `{"x":1}`}, {ID: "call_b", Name: "beta", Arguments: `{}`}},
	}))
	resp, body := rawPost(t, srv.URL+"/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"q"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	frames := sseFrames(t, body)
	if frames[len(frames)-1] != "[DONE]" {
		t.Fatalf("last frame %q, want [DONE]", frames[len(frames)-1])
	}
	chunks := make([]map[string]any, 0, len(frames)-1)
	for _, f := range frames[:len(frames)-1] {
		chunks = append(chunks, mustJSON(t, []byte(f)))
	}
	for i, c := range chunks {
		for _, key := range []string{"id", "object", "created", "model", "choices", "usage"} {
			if _, ok := c[key]; !ok {
				t.Errorf("chunk %d lacks %q: %v", i, key, c)
			}
		}
		if c["object"] != "chat.completion.chunk" || c["model"] != "m" {
			t.Errorf("chunk %d: object %v model %v", i, c["object"], c["model"])
		}
		if i < len(chunks)-1 {
			if c["usage"] != nil {
				t.Errorf("chunk %d: usage must be null before the last chunk: %v", i, c["usage"])
			}
			choice := c["choices"].([]any)[0].(map[string]any)
			if lp, ok := choice["logprobs"]; !ok || lp != nil {
				t.Errorf("chunk %d: logprobs must be present and null: %v", i, choice)
			}
			if _, ok := choice["finish_reason"]; !ok {
				t.Errorf("chunk %d: finish_reason must be present: %v", i, choice)
			}
		}
	}

	delta := func(i int) map[string]any {
		return chunks[i]["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	if d := delta(0); d["role"] != "assistant" || d["content"] != "" {
		t.Errorf("first delta %v", d)
	}
	if d := delta(1); d["reasoning_content"] != "hm" {
		t.Errorf("reasoning delta %v", d)
	}
	if d := delta(2); d["content"] != "Hi" {
		t.Errorf("content delta %v", d)
	}
	// The first fragment of each call names it, with empty arguments.
	firstFragment := delta(3)["tool_calls"].([]any)[0].(map[string]any)
	fn := firstFragment["function"].(map[string]any)
	if firstFragment["index"] != 0.0 || firstFragment["id"] != "call_a" || firstFragment["type"] != "function" || fn["name"] != "alpha" || fn["arguments"] != "" {
		t.Errorf("first fragment %v", firstFragment)
	}
	// Later fragments carry only the index and a piece of the arguments.
	later := delta(4)["tool_calls"].([]any)[0].(map[string]any)
	if _, hasID := later["id"]; hasID || later["index"] != 0.0 || later["function"].(map[string]any)["arguments"] != `{"x"` {
		t.Errorf("later fragment %v", later)
	}
	if _, hasName := later["function"].(map[string]any)["name"]; hasName {
		t.Errorf("later fragment repeats the name: %v", later)
	}
	second := delta(6)["tool_calls"].([]any)[0].(map[string]any)
	if second["index"] != 1.0 || second["id"] != "call_b" {
		t.Errorf("second call's first fragment %v", second)
	}

	finish := chunks[len(chunks)-2]["choices"].([]any)[0].(map[string]any)
	if finish["finish_reason"] != "tool_calls" || len(finish["delta"].(map[string]any)) != 0 {
		t.Errorf("finish chunk %v", finish)
	}
	usageChunk := chunks[len(chunks)-1]
	if choices := usageChunk["choices"].([]any); len(choices) != 0 {
		t.Errorf("usage chunk choices %v, want []", choices)
	}
	usage := usageChunk["usage"].(map[string]any)
	if _, ok := usage["prompt_tokens_details"].(map[string]any)["cached_tokens"]; !ok {
		t.Errorf("usage lacks prompt_tokens_details.cached_tokens: %v", usage)
	}
	if _, ok := usage["completion_tokens_details"].(map[string]any)["reasoning_tokens"]; !ok {
		t.Errorf("usage lacks completion_tokens_details.reasoning_tokens: %v", usage)
	}
}

func TestStreamWithoutUsageOmitsUsageField(t *testing.T) {
	srv := NewServer(t, Always(Calls(Call("only_tool", `{}`))))
	_, body := rawPost(t, srv.URL+"/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"q"}]}`)
	frames := sseFrames(t, body)
	for _, f := range frames[:len(frames)-1] {
		if _, ok := mustJSON(t, []byte(f))["usage"]; ok {
			t.Errorf("usage present without include_usage: %s", f)
		}
	}
	first := mustJSON(t, []byte(frames[0]))["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if content, ok := first["content"]; !ok || content != nil {
		t.Errorf("with only tool calls the first delta's content must be null: %v", first)
	}
}

func TestCompletionWireFormat(t *testing.T) {
	srv := NewServer(t, Always(Response{Reasoning: "r", ToolCalls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":"b"}`}}}))
	resp, body := rawPost(t, srv.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"q"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	got := mustJSON(t, body)
	if got["object"] != "chat.completion" {
		t.Errorf("object %v", got["object"])
	}
	choice := got["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if content, ok := msg["content"]; !ok || content != nil || msg["role"] != "assistant" || msg["reasoning_content"] != "r" {
		t.Errorf("message %v", msg)
	}
	tc := msg["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "call_1" || tc["type"] != "function" || tc["function"].(map[string]any)["arguments"] != `{"a":"b"}` {
		t.Errorf("tool call %v", tc)
	}
	if choice["finish_reason"] != "tool_calls" {
		t.Errorf("finish_reason %v", choice["finish_reason"])
	}
	usage := got["usage"].(map[string]any)
	if usage["total_tokens"].(float64) == 0 {
		t.Errorf("usage %v", usage)
	}
}
