package llmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
)

// runConversation plays an agent loop against the server: it calls the
// model, answers every tool call with "result of NAME", and stops at the
// first answer without tool calls or after maxTurns. It returns the final
// text and the names of the tools called, in order.
func runConversation(ctx context.Context, client *openai.Client, system, user string, stream bool, maxTurns int) (string, []string, error) {
	var messages []openai.ChatCompletionMessageParamUnion
	if system != "" {
		messages = append(messages, openai.SystemMessage(system))
	}
	messages = append(messages, openai.UserMessage(user))
	var called []string
	for turn := 0; turn < maxTurns; turn++ {
		params := openai.ChatCompletionNewParams{Model: testModel, Messages: messages}
		var msg openai.ChatCompletionMessage
		if stream {
			s := client.Chat.Completions.NewStreaming(ctx, params)
			acc := &openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				return "", called, err
			}
			msg = acc.Choices[0].Message
		} else {
			resp, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				return "", called, err
			}
			msg = resp.Choices[0].Message
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content, called, nil
		}
		messages = append(messages, msg.ToParam())
		for _, tc := range msg.ToolCalls {
			called = append(called, tc.Function.Name)
			messages = append(messages, openai.ToolMessage("result of "+tc.Function.Name, tc.ID))
		}
	}
	return "", called, errors.New("no final answer")
}

func TestSequencePicksByTurn(t *testing.T) {
	srv := NewServer(t, Sequence(
		Calls(Call("search", `{"q":"go"}`)),
		Calls(Call("open", `{"n":1}`), Call("open", `{"n":2}`)),
		Reply("done"),
	))
	text, called, err := runConversation(context.Background(), newClient(srv), "", "find go docs", true, 5)
	if err != nil {
		t.Fatal(err)
	}
	if text != "done" || strings.Join(called, ",") != "search,open,open" {
		t.Errorf("text %q, tools %v", text, called)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Turn() != i {
			t.Errorf("request %d has turn %d", i, r.Turn())
		}
	}
	results := reqs[2].ToolResults()
	if len(results) != 2 || results[0].Content != "result of open" || results[0].ToolCallID != reqs[2].Messages[3].ToolCalls[0].ID {
		t.Errorf("last request's tool results %+v", results)
	}

	// Past the end the last turn repeats.
	past := &Request{Messages: []Message{{Role: "assistant"}, {Role: "assistant"}, {Role: "assistant"}, {Role: "assistant"}}}
	if got := srv.script.Respond(past); got.Text != "done" {
		t.Errorf("turn 4 answered %+v, want the last turn", got)
	}
}

func TestRouteDispatchesConcurrentConversations(t *testing.T) {
	weather := func(city string) Script {
		return Sequence(
			Response{ToolCalls: []ToolCall{Call("get_weather", fmt.Sprintf(`{"city":%q}`, city))}, ChunkSize: 2},
			Response{Text: "Sunny in " + city, ChunkSize: 3},
		)
	}
	srv := NewServer(t, Route(
		Rule{Match: SystemContains("pirate"), Script: Always(Reply("Arr"))},
		Rule{Match: UserContains("Paris"), Script: weather("Paris")},
		Rule{Match: UserContains("Tokyo"), Script: weather("Tokyo")},
	))
	client := newClient(srv)

	type outcome struct {
		text   string
		called []string
		err    error
	}
	cases := []struct{ system, user, want string }{
		{"", "Weather in Paris?", "Sunny in Paris"},
		{"", "Weather in Tokyo?", "Sunny in Tokyo"},
		{"You are a pirate.", "Weather in Paris?", "Arr"},
	}
	const rounds = 8
	results := make([]outcome, rounds*len(cases))
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			c := cases[i%len(cases)]
			text, called, err := runConversation(context.Background(), client, c.system, c.user, i%2 == 0, 4)
			results[i] = outcome{text, called, err}
		})
	}
	wg.Wait()
	for i, got := range results {
		want := cases[i%len(cases)].want
		if got.err != nil || got.text != want {
			t.Errorf("conversation %d: %q (%v), want %q", i, got.text, got.err, want)
		}
	}
	for _, r := range srv.Requests() {
		if r.Turn() == 1 && strings.Contains(r.LastUserText(), "Tokyo") && !strings.Contains(r.Messages[1].ToolCalls[0].Arguments, "Tokyo") {
			t.Errorf("a Tokyo conversation received another's tool call: %+v", r.Messages[1])
		}
	}
}

func TestRouteWithoutMatchAnswers500(t *testing.T) {
	srv := NewServer(t, Route(Rule{Match: UserContains("Paris"), Script: Always(Reply("ok"))}))
	_, err := newClient(srv).Chat.Completions.New(context.Background(), userParams("Weather in Rome?"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "no rule matched") || !strings.Contains(apiErr.Message, "Rome") {
		t.Errorf("error %v, want a 500 saying no rule matched", err)
	}
}

func TestFlakyCountsPerConversation(t *testing.T) {
	srv := NewServer(t, Flaky(2, 503, Always(Reply("ok"))))
	client := newClient(srv)
	attempt := func(user string) int {
		_, err := client.Chat.Completions.New(context.Background(), userParams(user))
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return apiErr.StatusCode
		}
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		return 200
	}
	// Interleaved, so one shared counter would let B succeed early.
	steps := []struct {
		user string
		want int
	}{
		{"A", 503}, {"B", 503}, {"A", 503}, {"A", 200}, {"B", 503}, {"B", 200}, {"A", 200},
	}
	for i, s := range steps {
		if got := attempt(s.user); got != s.want {
			t.Errorf("step %d (%s): status %d, want %d", i, s.user, got, s.want)
		}
	}
}

func TestFlakyConcurrentConversations(t *testing.T) {
	srv := NewServer(t, Flaky(3, 429, Always(Reply("ok"))))
	client := newClient(srv)
	failures := make([]int, 12)
	var wg sync.WaitGroup
	for i := range failures {
		wg.Go(func() {
			params := userParams(fmt.Sprintf("conversation %d", i))
			for range 10 {
				if _, err := client.Chat.Completions.New(context.Background(), params); err == nil {
					return
				}
				failures[i]++
			}
		})
	}
	wg.Wait()
	for i, n := range failures {
		if n != 3 {
			t.Errorf("conversation %d failed %d times, want 3", i, n)
		}
	}
}

func TestScriptConstructorsRefuseBrokenTests(t *testing.T) {
	for name, build := range map[string]func(){
		"empty Sequence":     func() { Sequence() },
		"Flaky with 200":     func() { Flaky(1, 200, Always(Reply("x"))) },
		"Flaky with status0": func() { Flaky(1, 0, Always(Reply("x"))) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			build()
		}()
	}
}
