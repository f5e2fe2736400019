package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The wire format is checked with openai-go, the SDK the project's own
// decoder is checked against: whatever it accepts, clients accept.
func sdk(delay time.Duration) openai.Client {
	return openai.NewClient(option.WithBaseURL(URL), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: &Transport{ChunkDelay: delay}}))
}

func orderParams() openai.ChatCompletionNewParams {
	var tool openai.ChatCompletionToolUnionParam
	if err := json.Unmarshal([]byte(orderTool), &tool); err != nil {
		panic(err)
	}
	return openai.ChatCompletionNewParams{
		Model:         "anything",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Where is my order A-1001?")},
		Tools:         []openai.ChatCompletionToolUnionParam{tool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

func TestTransportStreamsChunksTheSDKAccepts(t *testing.T) {
	c := sdk(0)
	stream := c.Chat.Completions.NewStreaming(context.Background(), orderParams())
	acc := openai.ChatCompletionAccumulator{}
	var reasoning strings.Builder
	var finished []openai.FinishedChatCompletionToolCall
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("chunk %d refused: %s", chunks, ch.RawJSON())
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		if len(ch.Choices) > 0 {
			if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
				var s string
				_ = json.Unmarshal([]byte(f.Raw()), &s)
				reasoning.WriteString(s)
			}
		}
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if acc.Model != Model || !strings.HasPrefix(msg.Content, Marker+" Calling get_order_status") || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("model %q content %q finish %q", acc.Model, msg.Content, acc.Choices[0].FinishReason)
	}
	if len(finished) != 1 || finished[0].Name != "get_order_status" || finished[0].Arguments != `{"orderId":"A-1001"}` {
		t.Errorf("tool calls %+v", finished)
	}
	if !strings.Contains(reasoning.String(), "get_order_status") {
		t.Errorf("reasoning %q", reasoning.String())
	}
	if acc.Usage.TotalTokens == 0 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+acc.Usage.CompletionTokens {
		t.Errorf("usage %+v", acc.Usage)
	}
	if chunks < 8 {
		t.Errorf("only %d chunks: the answer should stream in pieces", chunks)
	}
}

func TestTransportAnswersWithoutStreaming(t *testing.T) {
	c := sdk(time.Hour) // no chunk delay applies without streaming
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != Model || !strings.HasPrefix(res.Choices[0].Message.Content, Marker) || res.Usage.TotalTokens == 0 {
		t.Fatalf("%s", res.RawJSON())
	}
}

func TestTransportRefusesWhatItDoesNotServe(t *testing.T) {
	c := sdk(0)
	_, err := c.Models.List(context.Background())
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
		t.Fatalf("models: %v", err)
	}
	hc := &http.Client{Transport: &Transport{}}
	resp, err := hc.Post(URL+"/chat/completions", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_request"`) {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if _, err := hc.Post("http://example.com/v1/chat/completions", "application/json", strings.NewReader("{}")); err == nil {
		t.Fatal("another host was answered")
	}
}

// A cancelled request ends its stream (and the goroutine writing it) at
// once, whatever is left to send.
func TestTransportStreamEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := sdk(50 * time.Millisecond)
	stream := c.Chat.Completions.NewStreaming(ctx, orderParams())
	if !stream.Next() {
		t.Fatalf("no first chunk: %v", stream.Err())
	}
	cancel()
	start := time.Now()
	for stream.Next() {
	}
	if stream.Err() == nil || time.Since(start) > time.Second {
		t.Fatalf("stream went on after cancel: err %v after %v", stream.Err(), time.Since(start))
	}
}

func TestIsURL(t *testing.T) {
	for u, want := range map[string]bool{URL: true, "https://DEMO.ruleagent.invalid": true, " http://demo.ruleagent.invalid/v1/ ": true,
		"http://127.0.0.1:11434/v1": false, "http://demo.ruleagent.invalid.example.com/v1": false, "": false, "demo": false} {
		if IsURL(u) != want {
			t.Errorf("IsURL(%q) = %v", u, !want)
		}
	}
}
