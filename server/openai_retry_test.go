package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// Agents of the retry tests, told apart by their system prompts.
const (
	promptSteady  = "You are steady."  // calls lookup, then answers
	promptFlaky   = "You are flaky."   // calls lookup, then the model fails
	promptDown    = "You are down."    // the model fails at once
	promptHanging = "You are hanging." // calls lookup, then the model hangs
	promptTalker  = "You are talker."  // calls lookup, then answers slowly, chunk by chunk
)

func retryScript() llmtest.Script {
	lookup := llmtest.Calls(llmtest.Call("lookup", `{"key":"A-1"}`))
	fail := llmtest.Response{Status: http.StatusInternalServerError, ErrorMessage: "the model is down"}
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptSteady), Script: llmtest.Sequence(lookup, llmtest.Reply("Found it."))},
		llmtest.Rule{Match: llmtest.SystemContains(promptFlaky), Script: llmtest.Sequence(lookup, fail)},
		llmtest.Rule{Match: llmtest.SystemContains(promptDown), Script: llmtest.Always(fail)},
		llmtest.Rule{Match: llmtest.SystemContains(promptHanging), Script: llmtest.Sequence(lookup, llmtest.Response{Hang: true})},
		llmtest.Rule{Match: llmtest.SystemContains(promptTalker), Script: llmtest.Sequence(lookup,
			llmtest.Response{Text: strings.Repeat("word ", 30), ChunkSize: 5, ChunkDelay: 20 * time.Millisecond})},
	)
}

// retryEnv is the server with the retry test agents; it counts the chat
// completion requests that reach it.
type retryEnv struct {
	t        *testing.T
	llm      *llmtest.Server
	store    *Store
	base     string
	attempts atomic.Int64
}

func newRetryEnv(t *testing.T, opts Options) *retryEnv {
	t.Helper()
	e := &retryEnv{t: t, llm: llmtest.NewServer(t, retryScript())}
	dir := t.TempDir()
	lookupTool := []any{map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}}
	chains := map[string]string{
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};`),
	}
	for id, prompt := range map[string]string{"steady": promptSteady, "flaky": promptFlaky, "down": promptDown, "hanging": promptHanging, "talker": promptTalker} {
		chains[id] = chainDSL(id, id, nil, agentNode(prompt, map[string]any{"tools": lookupTool}))
	}
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStore(dir, NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	opts.Store = e.store
	h := Handler(opts)
	e.base = serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			e.attempts.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	return e
}

// llmCalls is the number of requests that reached the model.
func (e *retryEnv) llmCalls() int { return len(e.llm.Requests()) }

// waitCalls waits until n requests have reached the model.
func (e *retryEnv) waitCalls(n int) {
	deadline := time.Now().Add(10 * time.Second)
	for e.llmCalls() < n {
		if time.Now().After(deadline) {
			e.t.Errorf("timed out waiting for %d model requests (%d came)", n, e.llmCalls())
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// post sends a chat completion; hdr are header name, value pairs.
func (e *retryEnv) post(ctx context.Context, body map[string]any, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil
		}
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

func chatBody(model, text string, stream bool) map[string]any {
	return map[string]any{"model": model, "stream": stream, "messages": []any{map[string]any{"role": "user", "content": text}}}
}

// openAIError decodes an OpenAI error body.
func openAIError(t *testing.T, body []byte) (message, typ, code string) {
	t.Helper()
	var v struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	if v.Error.Code != nil {
		code = *v.Error.Code
	}
	return v.Error.Message, v.Error.Type, code
}

// A retry of an answered request (same body, same caller, within the
// window) gets the first answer again, marked Idempotent-Replayed, without
// reaching the model; streamed, the same chunks.
func TestOpenAIRetryGetsTheFirstAnswer(t *testing.T) {
	e := newRetryEnv(t, Options{})
	for _, stream := range []bool{false, true} {
		body := chatBody("steady", "find A-1", stream)
		first, firstBody := e.post(t.Context(), body)
		if first.StatusCode != 200 || !strings.Contains(string(firstBody), `"finish_reason":"stop"`) || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("stream %v: first attempt %d %s", stream, first.StatusCode, firstBody)
		}
		calls := e.llmCalls()
		retry, retryBody := e.post(t.Context(), body)
		if retry.StatusCode != 200 || !bytes.Equal(retryBody, firstBody) || retry.Header.Get("Idempotent-Replayed") != "true" ||
			retry.Header.Get("X-Run-Id") != first.Header.Get("X-Run-Id") {
			t.Fatalf("stream %v: retry %d %v\n%s\nfirst:\n%s", stream, retry.StatusCode, retry.Header, retryBody, firstBody)
		}
		if n := e.llmCalls(); n != calls {
			t.Fatalf("stream %v: the retry reached the model (%d requests, %d before)", stream, n, calls)
		}
		// Another caller (token) asking the same runs its own.
		if _, other := e.post(t.Context(), body, "Authorization", "Bearer someone-else"); bytes.Equal(other, firstBody) || e.llmCalls() == calls {
			t.Fatalf("stream %v: another caller got the first caller's answer", stream)
		}
	}
}

// A run that fails after its tool calls ran is answered 422 (no SDK
// retries it), saying why, with the cause's code; a retry gets the same
// answer and does not run the agent again. A failure before any tool call
// is not kept: the retry runs.
func TestOpenAIFailureAfterToolCalls(t *testing.T) {
	e := newRetryEnv(t, Options{})
	body := chatBody("flaky", "find A-1", false)
	resp, out := e.post(t.Context(), body)
	msg, typ, code := openAIError(t, out)
	if resp.StatusCode != http.StatusUnprocessableEntity || typ != "run_failed_after_tool_calls" || code != "llm_error" ||
		!strings.Contains(msg, "after 1 tool call had run (lookup)") || !strings.Contains(msg, "the model is down") ||
		resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("failure after tool calls: %d %v %s", resp.StatusCode, resp.Header, out)
	}
	calls := e.llmCalls()
	if calls != 2 {
		t.Fatalf("%d model requests, want 2 (the tool call, the failing turn)", calls)
	}
	retry, again := e.post(t.Context(), body)
	if retry.StatusCode != http.StatusUnprocessableEntity || !bytes.Equal(again, out) || e.llmCalls() != calls {
		t.Fatalf("retry: %d %s (%d model requests)", retry.StatusCode, again, e.llmCalls())
	}

	// Streamed: the error event says the same; a retry replays it.
	sbody := chatBody("flaky", "find A-1", true)
	_, streamed := e.post(t.Context(), sbody)
	if !strings.Contains(string(streamed), `"type":"run_failed_after_tool_calls"`) {
		t.Fatalf("streamed failure: %s", streamed)
	}
	calls = e.llmCalls()
	if _, again := e.post(t.Context(), sbody); !bytes.Equal(again, streamed) || e.llmCalls() != calls {
		t.Fatalf("streamed retry: %s", again)
	}

	// Nothing ran: the failure is not kept, the retry runs again.
	down := chatBody("down", "hello", false)
	resp, out = e.post(t.Context(), down)
	if _, _, code := openAIError(t, out); resp.StatusCode != http.StatusBadGateway || code != "llm_error" {
		t.Fatalf("failure before any tool call: %d %s", resp.StatusCode, out)
	}
	calls = e.llmCalls()
	if resp, _ := e.post(t.Context(), down); resp.Header.Get("Idempotent-Replayed") != "" || e.llmCalls() != calls+1 {
		t.Fatalf("the retry of a failure before any tool call did not run (%d model requests, %d before)", e.llmCalls(), calls)
	}
}

// The first attempt's client went away (an SDK's timeout) after the tool
// call ran: the run is cancelled, and its retry is answered 422 without
// running it again.
func TestOpenAIRetryAfterTheClientLeft(t *testing.T) {
	e := newRetryEnv(t, Options{})
	body := chatBody("hanging", "find A-1", false)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		// Leave once the model hangs on the turn after the tool call.
		e.waitCalls(2)
		cancel()
	}()
	e.post(ctx, body)
	resp, out := e.post(t.Context(), body)
	msg, typ, code := openAIError(t, out)
	if resp.StatusCode != http.StatusUnprocessableEntity || typ != "run_failed_after_tool_calls" || code != "cancelled" ||
		!strings.Contains(msg, "lookup") || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry after the client left: %d %v %s", resp.StatusCode, resp.Header, out)
	}
	if n := e.llmCalls(); n != 2 {
		t.Fatalf("%d model requests, want 2", n)
	}
}

// A retry that comes while the first attempt runs waits for it
// (non-streamed) or follows it (streamed): the same chunks, one run.
func TestOpenAIRetryJoinsARunningAttempt(t *testing.T) {
	e := newRetryEnv(t, Options{})
	for _, stream := range []bool{true, false} {
		body := chatBody("talker", "talk", stream)
		if !stream {
			body["metadata"] = map[string]string{"mode": "json"} // another request than the streamed one
		}
		before := e.llmCalls()
		var wg sync.WaitGroup
		var first []byte
		wg.Go(func() { _, first = e.post(t.Context(), body) })
		e.waitCalls(before + 2) // the slow answer has begun
		resp, retry := e.post(t.Context(), body)
		wg.Wait()
		if resp.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(retry, first) || !strings.Contains(string(first), "word") {
			t.Fatalf("stream %v: the retry got %s\nthe first %s", stream, retry, first)
		}
		if n := e.llmCalls(); n != before+2 {
			t.Fatalf("stream %v: %d model requests, want %d", stream, n, before+2)
		}
	}
}

// An Idempotency-Key names a request: the same key and body get the first
// answer; the same key with another body is refused; a new key runs the
// same body again.
func TestOpenAIIdempotencyKey(t *testing.T) {
	e := newRetryEnv(t, Options{RetryWindow: -1}) // only keys count
	body := chatBody("steady", "find A-1", false)
	_, first := e.post(t.Context(), body, "Idempotency-Key", "k-1")
	calls := e.llmCalls()
	if resp, again := e.post(t.Context(), body, "Idempotency-Key", "k-1"); resp.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again, first) {
		t.Fatalf("same key: %s", again)
	}
	resp, out := e.post(t.Context(), chatBody("steady", "find B-2", false), "Idempotency-Key", "k-1")
	if _, _, code := openAIError(t, out); resp.StatusCode != http.StatusUnprocessableEntity || code != "idempotency_key_reused" {
		t.Fatalf("same key, another body: %d %s", resp.StatusCode, out)
	}
	if e.llmCalls() != calls {
		t.Fatal("a replayed or refused request reached the model")
	}
	if resp, _ := e.post(t.Context(), body, "Idempotency-Key", "k-2"); resp.Header.Get("Idempotent-Replayed") != "" || e.llmCalls() == calls {
		t.Fatal("a new key did not run the request")
	}
	// Without a key and with the window off, the same body runs again.
	calls = e.llmCalls()
	e.post(t.Context(), body)
	e.post(t.Context(), body)
	if n := e.llmCalls(); n != calls+4 {
		t.Fatalf("window off: %d model requests, want %d", n, calls+4)
	}
	if resp, out := e.post(t.Context(), body, "Idempotency-Key", strings.Repeat("k", 256)); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a key of 256 characters: %d %s", resp.StatusCode, out)
	}
}

// The window ends: the same body later is a new request.
func TestOpenAIRetryWindowEnds(t *testing.T) {
	e := newRetryEnv(t, Options{RetryWindow: 300 * time.Millisecond})
	body := chatBody("steady", "find A-1", false)
	e.post(t.Context(), body)
	calls := e.llmCalls()
	time.Sleep(600 * time.Millisecond)
	if resp, _ := e.post(t.Context(), body); resp.Header.Get("Idempotent-Replayed") != "" || e.llmCalls() == calls {
		t.Fatal("the same body after the window was answered from the store")
	}
}

// The openai npm client, retrying as it does for its users (maxRetries),
// never runs an agent twice: a failure after tool calls is 422, which it
// does not retry; its retry after a timeout (the first attempt's run was
// cancelled after its tool call) gets that answer instead of a new run; an
// Idempotency-Key given as a request option gets the first completion
// again, streamed or not.
func TestOpenAIRetriesWithTheRealClient(t *testing.T) {
	e := newRetryEnv(t, Options{})
	user := []any{map[string]any{"role": "user", "content": "find A-1"}}
	scenario := func(name string, fields map[string]any) map[string]any {
		sc := map[string]any{"name": name, "messages": user}
		for k, v := range fields {
			sc[k] = v
		}
		return sc
	}
	run := func(sc map[string]any) (oaiResult, int64, int) {
		attempts, calls := e.attempts.Load(), e.llmCalls()
		res := runOpenAIClient(t, e.base, "sk-test", sc)[sc["name"].(string)]
		return res, e.attempts.Load() - attempts, e.llmCalls() - calls
	}

	res, attempts, calls := run(scenario("failure", map[string]any{"kind": "error", "model": "flaky", "options": map[string]any{"maxRetries": 3}}))
	if res.Error == nil || res.Error.Class != "UnprocessableEntityError" || res.Error.Status != 422 || res.Error.Code != "llm_error" ||
		!strings.Contains(res.Error.Message, "lookup") || attempts != 1 || calls != 2 {
		t.Errorf("failure after tool calls: %+v, %d attempts, %d model requests", res.Error, attempts, calls)
	}

	res, attempts, calls = run(scenario("timeout", map[string]any{"kind": "error", "model": "hanging",
		"options": map[string]any{"maxRetries": 2, "timeout": 1500}}))
	if res.Error == nil || res.Error.Class != "UnprocessableEntityError" || res.Error.Code != "cancelled" || attempts != 2 || calls != 2 {
		t.Errorf("a retry after a timeout: %+v, %d attempts, %d model requests", res.Error, attempts, calls)
	}

	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "key", true: "key-stream"}[stream]
		res, attempts, calls = run(scenario(name, map[string]any{"kind": "repeat", "times": 2, "stream": stream, "model": "steady",
			"options": map[string]any{"headers": map[string]any{"Idempotency-Key": "sdk-" + name}}}))
		if len(res.Attempts) != 2 || res.Attempts[0].Error != nil || res.Attempts[1].Error != nil {
			t.Fatalf("%s: %+v", name, res)
		}
		a, b := res.Attempts[0].Completion, res.Attempts[1].Completion
		if a.ID == "" || a.ID != b.ID || a.content() != b.content() || !strings.Contains(a.content(), "Found it.") || attempts != 2 || calls != 2 {
			t.Errorf("%s: %+v / %+v, %d attempts, %d model requests", name, a, b, attempts, calls)
		}
	}
}
