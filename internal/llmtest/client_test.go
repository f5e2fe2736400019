package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The tests check fidelity with the official SDK rather than with this
// package's own parsing: whatever openai-go accepts, the code under test
// (which uses it) will accept too.

const testModel = "test-model"

// newClient talks to srv only: explicit base URL and key, so the
// environment's OPENAI_* variables cannot redirect it, and no retries, so
// every failure shows up as exactly one request.
func newClient(srv *Server) *openai.Client {
	client := openai.NewClient(
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("test"),
		option.WithMaxRetries(0),
	)
	return &client
}

func userParams(text string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    testModel,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)},
	}
}

func withUsage(p openai.ChatCompletionNewParams) openai.ChatCompletionNewParams {
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	return p
}

// streamed is everything one streaming call produced.
type streamed struct {
	acc    *openai.ChatCompletionAccumulator
	chunks []openai.ChatCompletionChunk
	// finishedToolCalls are the calls the accumulator reported as complete,
	// in order, which is how clients release tool calls mid-stream.
	finishedToolCalls []openai.FinishedChatCompletionToolCall
	err               error
}

func streamChat(ctx context.Context, t *testing.T, client *openai.Client, params openai.ChatCompletionNewParams) streamed {
	t.Helper()
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	out := streamed{acc: &openai.ChatCompletionAccumulator{}}
	for stream.Next() {
		c := stream.Current()
		if !out.acc.AddChunk(c) {
			t.Fatalf("accumulator rejected chunk %d: %s", len(out.chunks), c.RawJSON())
		}
		if tc, ok := out.acc.JustFinishedToolCall(); ok {
			out.finishedToolCalls = append(out.finishedToolCalls, tc)
		}
		out.chunks = append(out.chunks, c)
	}
	out.err = stream.Err()
	return out
}

// reasoningOf joins the reasoning_content deltas, which the SDK keeps as raw
// extra fields.
func reasoningOf(t *testing.T, chunks []openai.ChatCompletionChunk) string {
	t.Helper()
	var b strings.Builder
	for _, c := range chunks {
		if len(c.Choices) == 0 {
			continue
		}
		field, ok := c.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]
		if !ok {
			continue
		}
		var piece string
		if err := json.Unmarshal([]byte(field.Raw()), &piece); err != nil {
			t.Fatalf("reasoning_content %s: %v", field.Raw(), err)
		}
		b.WriteString(piece)
	}
	return b.String()
}

// rawPost sends body as is, for the wire-level checks the SDK hides.
func rawPost(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	return rawDo(t, http.MethodPost, url, "application/json", body)
}

func rawDo(t *testing.T, method, url, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s %s: %v", method, url, err)
	}
	return resp, data
}

func mustJSON(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, data)
	}
	return v
}
