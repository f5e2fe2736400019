package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
)

// The agent package runs the ReAct loop without RuleGo: an LLM client, a
// tool set built from a tools array (here with a registry of its own, so
// nothing is added to the process-wide one), and a Sink for the events.
func Example() {
	llm, err := llmtest.Start(llmtest.Sequence( // a scripted OpenAI-compatible model, in process
		llmtest.Calls(llmtest.Call("add", `{"a":2,"b":3}`)),
		llmtest.Reply("2 + 3 = 5."),
	))
	if err != nil {
		panic(err)
	}
	defer llm.Close()

	client, err := agent.NewClient(agent.LLMConfig{Endpoints: []agent.Endpoint{{URL: llm.URL, Model: "example-model"}}})
	if err != nil {
		panic(err)
	}
	registry := tools.NewRegistry()
	_ = registry.Register(tools.Definition{Name: "add", Description: "Adds two numbers.",
		New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
			return tools.Func{
				Spec: tools.Info{Name: "add", Description: "Adds two numbers.",
					Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
				Fn: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
					var v struct{ A, B float64 }
					if err := json.Unmarshal(args, &v); err != nil {
						return tools.Result{}, tools.Wrap(tools.ErrInvalidArgs, err, "add")
					}
					return tools.TextResult(fmt.Sprint(v.A + v.B)), nil
				},
			}, nil
		}})
	set, err := tools.Build(context.Background(), []tools.Spec{{Type: tools.TypeBuiltin, Name: "add"}}, tools.BuildEnv{Registry: registry})
	if err != nil {
		panic(err)
	}
	defer set.Close()

	a, err := agent.New(agent.Config{LLM: client, Tools: set, MaxStep: 4})
	if err != nil {
		panic(err)
	}
	sink := events.SinkFunc(func(e events.Event) {
		switch e.Type {
		case events.ToolCallEnd:
			fmt.Println("calling a tool")
		case events.ToolCallResult:
			fmt.Println("tool result:", e.Content)
		}
	})
	out, err := a.Run(context.Background(), agent.Input{
		Messages:     []events.Message{{Role: events.RoleUser, Content: "What is 2 + 3?"}},
		SystemPrompt: "You are good at sums.",
		Stream:       true,
	}, sink)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (%d steps, %d tool call)\n", out.Content, out.Steps, out.ToolCalls)
	// Output:
	// calling a tool
	// tool result: 5
	// 2 + 3 = 5. (2 steps, 1 tool call)
}
