package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/mcpconformance"
	"github.com/ruleagent/ruleagent/internal/peers"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// conformanceClientEnv makes this test binary the client under test: the
// conformance suite starts it with a scenario server's URL as its last
// argument (see TestMain).
const conformanceClientEnv = "RULEAGENT_MCP_CONFORMANCE_CLIENT"

func TestMain(m *testing.M) {
	if os.Getenv(conformanceClientEnv) == "1" {
		os.Exit(conformanceClient(os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")))
	}
	os.Exit(m.Run())
}

// conformanceClient acts as an agent whose tools array holds one mcp entry
// for the scenario server: it builds the tool set (connecting and listing
// the tools, as an agent starts), then calls what the scenario asks for,
// each call through the tool wrapper, as the model would. A person (an
// ask.Asker accepting what the form shows) answers the server's questions,
// which is what governance will provide. It returns the exit code.
func conformanceClient(url, scenario, contextJSON string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec, _ := json.Marshal([]any{map[string]any{"type": "mcp", "name": "srv", "config": map[string]any{
		"server": url, "connectTimeout": "10s", "timeout": "10s", "required": true}}})
	specs, err := tools.ParseSpecs(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	set, err := tools.Build(ctx, specs, tools.BuildEnv{Providers: map[string]tools.Provider{tools.TypeMCP: NewProvider(Options{})}, WorkDir: os.TempDir()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		return 1
	}
	defer set.Close()

	// The calls the scenario asks for: from its context, else each tool
	// the server lists, with the arguments a model would give it.
	var scripted struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	_ = json.Unmarshal([]byte(contextJSON), &scripted)
	type call struct {
		name string
		args json.RawMessage
	}
	var calls []call
	for _, c := range scripted.ToolCalls {
		calls = append(calls, call{"srv__" + c.Name, c.Arguments})
	}
	if len(calls) == 0 {
		for _, name := range set.Names() {
			args := argumentsFor(set.Lookup(name).Tool.Info().Parameters)
			switch name {
			case "srv__add_numbers":
				args = json.RawMessage(`{"a":5,"b":3}`)
			case "srv__json_schema_echo":
				// Echoes the schema the model is shown for the 2020-12 tool.
				if other := set.Lookup("srv__json_schema_2020_12_tool"); other != nil {
					args, _ = json.Marshal(map[string]json.RawMessage{"schema": other.Tool.Info().Parameters})
				}
			}
			calls = append(calls, call{name, args})
		}
	}
	ctx = ask.WithAsker(ctx, ask.AskerFunc(func(_ context.Context, q ask.Question) (ask.Answer, error) {
		fmt.Printf("asked: %s\n", ask.Describe(q))
		return ask.Answer{Action: ask.Accept}, nil
	}))
	for i, c := range calls {
		o := set.Invoke(ctx, &tools.Run{Sink: events.Discard}, tools.Call{ID: fmt.Sprintf("c%d", i), Name: c.name, Args: c.args})
		fmt.Printf("%s %s -> error=%v %s\n", scenario, c.name, o.IsError, o.Content)
	}
	return 0
}

// argumentsFor makes the arguments a model would give a tool: a value of
// the right type for each required property.
func argumentsFor(schema json.RawMessage) json.RawMessage {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	args := map[string]any{}
	for _, name := range s.Required {
		typ, _ := s.Properties[name].Type.(string)
		switch typ {
		case "integer", "number":
			args[name] = 1
		case "boolean":
			args[name] = true
		case "object":
			args[name] = map[string]any{}
		case "array":
			args[name] = []any{}
		default:
			args[name] = "x"
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// clientConformanceRevisions are the requirement sets the client is held
// to, each with its baseline (testdata/conformance-client-<revision>.yml).
var clientConformanceRevisions = []string{"2025-11-25", "2026-07-28"}

// TestMCPClientConformance runs the client scenarios of
// @modelcontextprotocol/conformance (0.2, pinned in test/peers) against
// the mcp tool type, once per requirement set. Every failed check must be
// in the baseline with its reason, and every check there must fail.
func TestMCPClientConformance(t *testing.T) {
	peers.Need(t, peers.Loopback(t))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(conformanceClientEnv, "1")
	for _, rev := range clientConformanceRevisions {
		t.Run(rev, func(t *testing.T) {
			results := mcpconformance.Run(t, 5*time.Minute, "client", "--command", self, "--requirements", rev, "--timeout", "15000")
			bl := mcpconformance.LoadBaseline(t, filepath.Join("testdata", "conformance-client-"+rev+".yml"))
			t.Logf("client --requirements %s:\n%s", rev, mcpconformance.Table(results, bl))
			for _, p := range mcpconformance.Compare(results, bl) {
				t.Error(p)
			}
		})
	}
}
