package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// readmeModel is the LLM the README's transcripts run on: it sets the
// process's LLM settings for each transcript (a func of the transcript's
// test). Today a scripted model that answers the README's examples,
// named gpt-4o-mini as the tour configures it. Once the built-in demo
// model is on main, the transcripts should run on it, since that is what
// a newcomer without a key sees: return a func that leaves OPENAI_* unset
// (t.Setenv each to "" and os.Unsetenv it), then run the test with
// -update.
func readmeModel(t *testing.T) func(*testing.T) { return scriptedModel(t) }

// scriptedModel answers the example chains as the README tells them.
func scriptedModel(t *testing.T) func(*testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		// The reviewer starts answering when the summarizer has done, so
		// that the tour's transcript is the same every time.
		llmtest.Rule{Match: llmtest.SystemContains("careful code reviewer"), Script: llmtest.Always(llmtest.Response{
			Text: "Bug: the loop skips the last element.", ChunkSize: 64, ChunkDelay: 750 * time.Millisecond})},
		llmtest.Rule{Match: llmtest.SystemContains("You summarize texts"), Script: llmtest.Always(llmtest.Reply("- Adds a retry loop\n- Fixes the timeout"))},
		llmtest.Rule{Match: llmtest.SystemContains("You lead a small team"), Script: llmtest.Sequence(
			llmtest.Response{Text: "I'll ask both specialists.", ToolCalls: []llmtest.ToolCall{
				llmtest.Call("Code_Reviewer", `{"message":"Review: for i := 0; i < n-1; i++ {}"}`),
				llmtest.Call("Summarizer", `{"message":"Summarize the change notes."}`)}},
			llmtest.Reply("Review found one bug; summary attached."),
		)},
		llmtest.Rule{Match: llmtest.SystemContains("friendly support agent"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if len(r.ToolResults()) > 0 {
				return llmtest.Reply("Your order A-1001 has shipped with DHL and should arrive on 25 November.")
			}
			return llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-1001"}`))
		})},
		llmtest.Rule{Match: llmtest.SystemContains("friendly chat partner"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if r.LastUserText() == "What is my name?" && len(r.Messages) > 2 {
				return llmtest.Reply("Your name is Ada.")
			}
			return llmtest.Reply("Nice to meet you, Ada.")
		})},
		llmtest.Rule{Match: llmtest.SystemContains("Look orders up when asked."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("Order A-1001: " + res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-1001"}`))
		})},
		llmtest.Rule{Match: llmtest.SystemContains("helpful, concise assistant"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			switch q := r.LastUserText(); {
			case q == "Hi!":
				return llmtest.Response{Text: "Hello! How can I help you today?", ChunkSize: 5}
			case strings.Contains(q, "long story"):
				return llmtest.Response{Text: strings.Repeat("Once upon a time. ", 60), ChunkSize: 6, ChunkDelay: 100 * time.Millisecond}
			}
			return llmtest.Reply("A rule chain is a graph of processing nodes that a message flows through, each node deciding where it goes next.")
		})},
	))
	return func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", srv.URL)
		t.Setenv("OPENAI_API_KEY", "sk-readme-example-0001")
		t.Setenv("OPENAI_MODEL", "gpt-4o-mini")
	}
}
