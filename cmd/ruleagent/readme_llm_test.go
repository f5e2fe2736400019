package main

import (
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// readmeModel is the LLM the README's transcripts and HTTP samples run
// on: none configured, so that the built-in demo model answers, as it does
// for a newcomer without a key. A transcript that only makes sense with a
// real model (a model's own words, a session's memory) runs on
// scriptedModel instead (transcriptSetup's realModel), and the README says
// that it shows a real model's answer.
func readmeModel(*testing.T) func(*testing.T) { return noLLM }

// scriptedModel is the stand-in for a real model in the transcripts that
// show one (see readmeModel): named gpt-4o-mini, as the tour configures
// it, it answers the support agent in its own words and the sessions
// example from the conversation it is given.
func scriptedModel(t *testing.T) func(*testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
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
	))
	return func(t *testing.T) {
		t.Setenv("OPENAI_BASE_URL", srv.URL)
		t.Setenv("OPENAI_API_KEY", "sk-readme-example-0001")
		t.Setenv("OPENAI_MODEL", "gpt-4o-mini")
	}
}
