package components_test

import (
	"context"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	_ "github.com/ruleagent/ruleagent/components" // registers ai/agent, ai/intent and the built-in tools
	"github.com/ruleagent/ruleagent/events"
)

// assistantChain is a one-node agent chain. ${global.x} values come from
// the RuleGo config the engine is built with.
const assistantChain = `{
  "ruleChain": {"id": "assistant", "name": "Assistant"},
  "metadata": {"nodes": [{
    "id": "agent", "type": "ai/agent", "name": "Assistant",
    "configuration": {
      "url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
      "systemPrompt": "You are a helpful, concise assistant."
    }
  }]}
}`

// newAssistant deploys the chain in RuleGo's default pool, against any
// OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, a gateway).
func newAssistant(llmURL, apiKey, model string) (types.RuleEngine, error) {
	cfg := rulego.NewConfig()
	cfg.Properties.PutValue("llm_url", llmURL)
	cfg.Properties.PutValue("api_key", apiKey)
	cfg.Properties.PutValue("model", model)
	return rulego.New("assistant", []byte(assistantChain), rulego.WithConfig(cfg))
}

// ask runs the chain once and returns the answer. The run's AG-UI events
// (text as it streams, tool calls, sub-agents) reach sink as they happen;
// the sink in the context is also what makes the node stream.
func ask(ctx context.Context, engine types.RuleEngine, question string, sink events.Sink) (string, error) {
	var answer string
	var failed error
	msg := types.NewMsg(0, "CHAT", types.TEXT, types.NewMetadata(), question)
	engine.OnMsgAndWait(msg, types.WithContext(events.WithSink(ctx, sink)),
		types.WithOnEnd(func(_ types.RuleContext, m types.RuleMsg, err error, relation string) {
			answer, failed = m.GetData(), err
		}))
	return answer, failed
}
