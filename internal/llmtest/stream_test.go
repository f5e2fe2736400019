package llmtest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStreamText(t *testing.T) {
	const text = "Hello, streaming world!" // 23 runes: 5 chunks of up to 5
	srv := NewServer(t, Always(Response{Text: text, ChunkSize: 5}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("hi"))
	if got.err != nil {
		t.Fatal(got.err)
	}
	choice := got.acc.Choices[0]
	if choice.Message.Content != text || choice.FinishReason != "stop" || choice.Message.Role != "assistant" {
		t.Errorf("accumulated %q, finish %q, role %q", choice.Message.Content, choice.FinishReason, choice.Message.Role)
	}
	if got.acc.Model != testModel {
		t.Errorf("model %q", got.acc.Model)
	}
	// role chunk + 5 content chunks + finish chunk
	if len(got.chunks) != 7 {
		t.Errorf("%d chunks, want 7", len(got.chunks))
	}
	first := got.chunks[0]
	if first.Choices[0].Delta.Role != "assistant" || first.Choices[0].Delta.Content != "" {
		t.Errorf("first chunk must only carry the role: %s", first.RawJSON())
	}
	for i, c := range got.chunks {
		if c.ID != got.chunks[0].ID || c.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d: id %q object %q", i, c.ID, c.Object)
		}
		if i < len(got.chunks)-1 && c.Choices[0].FinishReason != "" {
			t.Errorf("chunk %d finishes early: %s", i, c.RawJSON())
		}
	}
	if got.chunks[1].Choices[0].Delta.Content != "Hello" {
		t.Errorf("ChunkSize 5: first content chunk %q", got.chunks[1].Choices[0].Delta.Content)
	}
	if got.acc.Usage.TotalTokens != 0 {
		t.Errorf("usage sent without include_usage: %+v", got.acc.Usage)
	}
}

func TestStreamUnicodeChunksByRune(t *testing.T) {
	const text = "Grüße aus Zürich ☀️ — 東京"
	srv := NewServer(t, Always(Response{Text: text, Reasoning: "Überlegung…", ChunkSize: 1}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("hi"))
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.acc.Choices[0].Message.Content != text {
		t.Errorf("content %q", got.acc.Choices[0].Message.Content)
	}
	if r := reasoningOf(t, got.chunks); r != "Überlegung…" {
		t.Errorf("reasoning %q", r)
	}
}

func TestStreamReasoningBeforeText(t *testing.T) {
	srv := NewServer(t, Always(Response{Reasoning: "The user wants a greeting.", Text: "Hi there!"}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("hi"))
	if got.err != nil {
		t.Fatal(got.err)
	}
	if r := reasoningOf(t, got.chunks); r != "The user wants a greeting." {
		t.Errorf("reasoning %q", r)
	}
	if got.acc.Choices[0].Message.Content != "Hi there!" {
		t.Errorf("content %q", got.acc.Choices[0].Message.Content)
	}
	seenText := false
	for _, c := range got.chunks {
		if len(c.Choices) == 0 {
			continue
		}
		if c.Choices[0].Delta.Content != "" {
			seenText = true
		}
		if _, ok := c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok && seenText {
			t.Errorf("reasoning after text: %s", c.RawJSON())
		}
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	calls := []ToolCall{
		Call("get_weather", `{"city":"Zürich ☀"}`),
		{ID: "call_fixed", Name: "get_time", Arguments: `{"tz":"Europe/Zurich"}`},
		Call("list_files", `{}`),
	}
	srv := NewServer(t, Always(Response{Text: "Checking.", ToolCalls: calls, ChunkSize: 3}))
	got := streamChat(context.Background(), t, newClient(srv), userParams("q"))
	if got.err != nil {
		t.Fatal(got.err)
	}
	choice := got.acc.Choices[0]
	if choice.FinishReason != "tool_calls" || choice.Message.Content != "Checking." {
		t.Errorf("finish %q content %q", choice.FinishReason, choice.Message.Content)
	}
	if len(choice.Message.ToolCalls) != len(calls) {
		t.Fatalf("%d tool calls, want %d", len(choice.Message.ToolCalls), len(calls))
	}
	ids := map[string]bool{}
	for i, tc := range choice.Message.ToolCalls {
		want := calls[i]
		if tc.Function.Name != want.Name || tc.Function.Arguments != want.Arguments || tc.Type != "function" {
			t.Errorf("call %d: %+v, want %+v", i, tc, want)
		}
		if tc.ID == "" || ids[tc.ID] {
			t.Errorf("call %d: id %q missing or repeated", i, tc.ID)
		}
		ids[tc.ID] = true
	}
	if choice.Message.ToolCalls[1].ID != "call_fixed" {
		t.Errorf("scripted id not kept: %q", choice.Message.ToolCalls[1].ID)
	}
	if len(got.finishedToolCalls) != len(calls) {
		t.Errorf("accumulator finished %d tool calls mid-stream, want %d", len(got.finishedToolCalls), len(calls))
	}
	// The weather arguments are 21 bytes, so at ChunkSize 3 they must arrive
	// in several fragments under one index.
	fragments := 0
	for _, c := range got.chunks {
		if len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) == 1 {
			d := c.Choices[0].Delta.ToolCalls[0]
			if d.Index == 0 && d.ID == "" && d.Function.Arguments != "" {
				fragments++
			}
		}
	}
	if fragments < 5 {
		t.Errorf("arguments of call 0 came in %d fragments, want several", fragments)
	}
}

func TestStreamUsage(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "ok", Usage: &Usage{PromptTokens: 12, CompletionTokens: 3, CachedTokens: 8, ReasoningTokens: 1}}))
	got := streamChat(context.Background(), t, newClient(srv), withUsage(userParams("q")))
	if got.err != nil {
		t.Fatal(got.err)
	}
	u := got.acc.Usage
	if u.PromptTokens != 12 || u.CompletionTokens != 3 || u.TotalTokens != 15 ||
		u.PromptTokensDetails.CachedTokens != 8 || u.CompletionTokensDetails.ReasoningTokens != 1 {
		t.Errorf("usage %+v", u)
	}
	last := got.chunks[len(got.chunks)-1]
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 15 {
		t.Errorf("last chunk must be the usage chunk: %s", last.RawJSON())
	}
	if got.acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish %q", got.acc.Choices[0].FinishReason)
	}
}

func TestStreamDefaultUsage(t *testing.T) {
	srv := NewServer(t, Always(Reply("a reasonably long answer")))
	got := streamChat(context.Background(), t, newClient(srv), withUsage(userParams("a question")))
	if got.err != nil {
		t.Fatal(got.err)
	}
	u := got.acc.Usage
	if u.PromptTokens == 0 || u.CompletionTokens == 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("default usage %+v", u)
	}
	if !srv.LastRequest().IncludeUsage || !srv.LastRequest().Stream {
		t.Errorf("request not parsed as streaming with usage: %s", srv.LastRequest().Body)
	}
}

func TestStreamStampChunks(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "abcdefgh", ChunkSize: 4, StampChunks: true}))
	before := time.Now().UnixNano()
	got := streamChat(context.Background(), t, newClient(srv), userParams("hi"))
	if got.err != nil {
		t.Fatal(got.err)
	}
	var stamps int
	for _, c := range got.chunks {
		text := c.Choices[0].Delta.Content
		if text == "" {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(text, " "), 10, 64)
		if err != nil || !strings.HasSuffix(text, " ") || n < before || n > time.Now().UnixNano() {
			t.Errorf("chunk %q is not a write time", text)
		}
		stamps++
	}
	if stamps != 2 {
		t.Errorf("%d stamped chunks, want 2 (one per chunk of the text)", stamps)
	}
}

// Frames are sent as they are, in order, then [DONE].
func TestStreamFrames(t *testing.T) {
	frames := []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"b","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"a","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	}
	srv := NewServer(t, Always(Response{Frames: frames}))
	raw := rawStream(t, srv)
	want := "data: " + frames[0] + "\n\ndata: " + frames[1] + "\n\ndata: [DONE]\n\n"
	if raw != want {
		t.Fatalf("stream\n%s\nwant\n%s", raw, want)
	}
}

// A Stall holds the stream silent after StallAfter frames, sending only
// keepalive comments, then goes on.
func TestStreamStall(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "ab", ChunkSize: 1, Stall: 250 * time.Millisecond, StallAfter: 2, Keepalive: 100 * time.Millisecond}))
	start := time.Now()
	raw := rawStream(t, srv)
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("the stream took %v, less than its stall", took)
	}
	// role chunk, "a", then the stall with two keepalives, then "b".
	before, after, ok := strings.Cut(raw, ": keepalive\n\n: keepalive\n\n")
	if !ok || strings.Count(before, "data: ") != 2 || !strings.Contains(before, `"content":"a"`) || !strings.Contains(after, `"content":"b"`) {
		t.Fatalf("stream:\n%s", raw)
	}
}

// A stall that outlasts the client ends when the client goes away.
func TestStreamStallEndsWithClient(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "ab", Stall: time.Hour}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got := streamChat(ctx, t, newClient(srv), userParams("hi"))
	if got.err == nil || len(got.chunks) != 0 {
		t.Fatalf("err %v, %d chunks", got.err, len(got.chunks))
	}
	waitAborted(t, srv)
}

func rawStream(t *testing.T, srv *Server) string {
	t.Helper()
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func waitAborted(t *testing.T, srv *Server) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Aborted()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server did not see the client go away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Without streaming, a Stall sends the headers and holds the body.
func TestCompletionStall(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "late", Stall: 200 * time.Millisecond}))
	start := time.Now()
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	headers := time.Since(start)
	b, _ := io.ReadAll(resp.Body)
	if headers > 150*time.Millisecond || time.Since(start) < 200*time.Millisecond || !strings.Contains(string(b), `"late"`) {
		t.Fatalf("headers after %v, body after %v: %s", headers, time.Since(start), b)
	}
}

// A Hold holds the stream after HoldAfter frames, flushed, until it is
// closed; a closed Hold holds nothing.
func TestStreamHold(t *testing.T) {
	gate := make(chan struct{})
	srv := NewServer(t, Always(Response{Text: "abc", ChunkSize: 1, Hold: gate, HoldAfter: 2}))
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The role chunk and "a" arrive, then nothing until the gate opens.
	got := make(chan string, 4)
	go func() {
		var sb strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			sb.Write(buf[:n])
			if strings.Count(sb.String(), "data: ") == 2 && strings.HasSuffix(sb.String(), "\n\n") {
				got <- sb.String()
			}
			if err != nil {
				got <- sb.String()
				return
			}
		}
	}()
	before := <-got
	if !strings.Contains(before, `"content":"a"`) || strings.Contains(before, `"content":"b"`) {
		t.Fatalf("before the gate opens: %s", before)
	}
	close(gate)
	after := <-got
	if !strings.Contains(after, `"content":"c"`) || !strings.HasSuffix(after, "data: [DONE]\n\n") {
		t.Fatalf("after the gate opens: %s", after)
	}
	// Released once, it stays open.
	if raw := rawStream(t, srv); !strings.Contains(raw, `"content":"c"`) {
		t.Fatalf("a released gate held: %s", raw)
	}
}

// A Hold that is never released ends when the client goes away.
func TestStreamHoldEndsWithClient(t *testing.T) {
	srv := NewServer(t, Always(Response{Text: "ab", Hold: make(chan struct{})}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got := streamChat(ctx, t, newClient(srv), userParams("hi"))
	if got.err == nil || len(got.chunks) != 0 {
		t.Fatalf("err %v, %d chunks", got.err, len(got.chunks))
	}
	waitAborted(t, srv)
}
