package components_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// exampleLLM is the OpenAI-compatible endpoint the examples run against:
// a scripted model served in process, so that they need no key and no
// network.
func exampleLLM(script llmtest.Script) *llmtest.Server {
	srv, err := llmtest.Start(script)
	if err != nil {
		panic(err)
	}
	return srv
}

// Run an agent chain from Go: deploy it with the LLM settings, then send
// it a message with a Sink in the context and print the text as it
// streams (newAssistant and ask are in example_agent_test.go; the README
// shows them).
func Example() {
	llm := exampleLLM(llmtest.Always(llmtest.Reply("A rule chain is a graph of nodes that a message flows through.")))
	defer llm.Close()
	engine, err := newAssistant(llm.URL, "sk-example", "example-model")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rulego.Del("assistant")

	streamed := events.SinkFunc(func(e events.Event) {
		if e.Type == events.TextMessageContent {
			fmt.Print(e.Delta)
		}
	})
	answer, err := ask(context.Background(), engine, "What is a rule chain, in one sentence?", streamed)
	fmt.Println()
	fmt.Printf("answer: %q, error: %v\n", answer, err)
	// Output:
	// A rule chain is a graph of nodes that a message flows through.
	// answer: "A rule chain is a graph of nodes that a message flows through.", error: <nil>
}

// Add a tool of your own: register a factory (example_tool_test.go, which
// the README shows), then name it in an agent's tools array like any
// built-in. Here the model calls it twice; the tool refuses the first call,
// and the model reads why.
func Example_tool() {
	llm := exampleLLM(llmtest.Sequence(
		llmtest.Calls(llmtest.Call("weather", `{"city":"Atlantis"}`)),
		llmtest.Calls(llmtest.Call("weather", `{"city":"Paris"}`)),
		llmtest.Reply("It is sunny in Paris: 64°F."),
	))
	defer llm.Close()
	chain := `{
	  "ruleChain": {"id": "forecaster"},
	  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "configuration": {
	    "url": "` + llm.URL + `", "model": "example-model",
	    "tools": [{"type": "builtin", "name": "weather", "config": {"units": "imperial"}}]
	  }}]}
	}`
	engine, err := rulego.New("forecaster", []byte(chain))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rulego.Del("forecaster")

	calls := events.SinkFunc(func(e events.Event) {
		if e.Type == events.ToolCallResult {
			fmt.Printf("weather → %s (error: %v)\n", e.Content, e.Meta.IsError)
		}
	})
	answer, err := ask(context.Background(), engine, "What's the weather in Paris?", calls)
	fmt.Println(answer, err)

	// A config the factory rejects is refused when the chain is deployed.
	_, err = rulego.New("forecaster-kelvin", []byte(strings.Replace(chain, "imperial", "kelvin", 1)))
	fmt.Println(err)
	// Output:
	// weather → Error (not_found): not found: no weather station in "Atlantis" (error: true)
	// weather → Paris: sunny, 64°F (error: false)
	// It is sunny in Paris: 64°F. <nil>
	// nodeType:ai/agent for id:agent init error:tools[0].config.units: "kelvin" is neither metric nor imperial
}

// Add an aspect: onlyAdminsRunCommands (example_aspect_test.go, which the
// README shows) intercepts every tool call of the ops chains, and refuses
// bash to anyone but an admin. The model reads the refusal as the call's
// result.
func Example_aspect() {
	llm := exampleLLM(llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if len(r.ToolResults()) > 0 {
			return llmtest.Reply("Done.")
		}
		return llmtest.Calls(llmtest.Call("bash", `{"command":"echo hello"}`))
	}))
	defer llm.Close()
	chain := `{
	  "ruleChain": {"id": "ops-agent"},
	  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "configuration": {
	    "url": "` + llm.URL + `", "model": "example-model",
	    "tools": [{"type": "builtin", "name": "bash"}]
	  }}]}
	}`
	engine, err := rulego.New("ops-agent", []byte(chain))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rulego.Del("ops-agent")

	for _, role := range []string{"guest", "admin"} {
		md := types.NewMetadata()
		md.PutValue("role", role)
		sink := events.SinkFunc(func(e events.Event) {
			if e.Type == events.ToolCallResult {
				first, _, _ := strings.Cut(e.Content, "\n")
				fmt.Printf("%s: bash → %s\n", role, first)
			}
		})
		engine.OnMsgAndWait(types.NewMsg(0, "CHAT", types.TEXT, md, "Say hello from the shell."),
			types.WithContext(events.WithSink(context.Background(), sink)))
	}
	// Output:
	// guest: bash → Error (permission_denied): permission denied: the call was refused: refused by aspect: components_test.onlyAdminsRunCommands: only admins may run commands
	// admin: bash → exit code: 0
}
