package components

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/demo"
)

// An agent whose url is the demo model's answers from it, in process.
func TestAgentOnTheDemoModel(t *testing.T) {
	id, dsl := agentChain(t, demo.URL, map[string]any{"model": demo.Model})
	r := send(t, context.Background(), newEngine(t, id, dsl), "hi", nil, false)
	end := oneTerminal(t, r, types.Success)
	if !strings.HasPrefix(end.msg.GetData(), demo.Marker+" ") || end.msg.Metadata.GetValue("model") != demo.Model {
		t.Fatalf("%q %v", end.msg.GetData(), end.msg.Metadata.Values())
	}
}

// The demo model's name is what the command line fills ${global.model}
// with when no LLM is configured. A chain that names its own server but
// leaves the model to that global has half a configuration: the run says
// the model is missing instead of asking the chain's server for the demo
// model.
func TestDemoModelNameAtAnotherServerIsMissing(t *testing.T) {
	id, dsl := agentChain(t, "http://127.0.0.1:1/v1", map[string]any{"model": demo.Model})
	r := send(t, context.Background(), newEngine(t, id, dsl), "hi", nil, false)
	end := oneTerminal(t, r, types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != CodeNoLLM || !strings.Contains(end.err.Error(), "missing model") {
		t.Fatalf("errorCode %q: %v", end.msg.Metadata.GetValue("errorCode"), end.err)
	}
}

// An agent that asks for JSON answers gets JSON from the demo model, which
// names itself inside it.
func TestAgentOnTheDemoModelAnswersJSON(t *testing.T) {
	id, dsl := agentChain(t, demo.URL, map[string]any{"model": demo.Model, "params": map[string]any{"responseFormat": "json_object"}})
	r := send(t, context.Background(), newEngine(t, id, dsl), "hi", nil, false)
	end := oneTerminal(t, r, types.Success)
	var v map[string]any
	if err := json.Unmarshal([]byte(end.msg.GetData()), &v); err != nil || v["model"] != demo.Model || v["demo"] != true {
		t.Fatalf("%q: %v", end.msg.GetData(), err)
	}
}
