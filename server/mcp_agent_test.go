package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/peers"
)

// mcpAgentStore deploys one agent chain whose tools array is tools, with
// the LLM at url.
func mcpAgentStore(t *testing.T, url string, tools []any) *Store {
	t.Helper()
	dsl, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "mcp-user", "name": "MCP user"},
		"metadata": map[string]any{"nodes": []any{map[string]any{"id": "agent", "type": "ai/agent", "configuration": map[string]any{
			"url": url, "model": "test-model", "systemPrompt": "Use the tools.", "retryBackoff": "1ms", "tools": tools,
			"workspace": t.TempDir()}}}},
	})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mcp-user.json"), dsl, 0o644); err != nil {
		t.Fatal(err)
	}
	s, errs := OpenStore(dir, NewConfig(nil))
	t.Cleanup(s.Close)
	for _, e := range errs {
		t.Fatal(e)
	}
	return s
}

// everythingScript calls echo and get-sum (names prefixed by the entry's
// name), then answers with what they returned.
func everythingScript(prefix string) llmtest.Script {
	return llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			var parts []string
			for _, m := range res {
				parts = append(parts, m.Content)
			}
			return llmtest.Reply("Results: " + strings.Join(parts, " | "))
		}
		return llmtest.Calls(llmtest.Call(prefix+"__echo", `{"message":"hi"}`), llmtest.Call(prefix+"__get-sum", `{"a":2,"b":3}`))
	})
}

func runAgent(t *testing.T, s *Store) (string, *events.Recorder) {
	t.Helper()
	var rec events.Recorder
	res, err := s.RunChain(context.Background(), "mcp-user", "Echo hi and add 2 and 3.", nil, &rec)
	if err != nil {
		t.Fatalf("%v (%s)", err, res.Msg.GetData())
	}
	return res.Msg.GetData(), &rec
}

func TestAgentWithEverythingOverStdio(t *testing.T) {
	bin := peers.Bin(t, "mcp-server-everything")
	srv := llmtest.NewServer(t, everythingScript("ev"))
	s := mcpAgentStore(t, srv.URL, []any{map[string]any{"type": "mcp", "name": "ev",
		"config": map[string]any{"server": "stdio:" + bin + " stdio", "tools": []any{"echo", "get-sum"}}}})
	answer, rec := runAgent(t, s)
	if !strings.Contains(answer, "Echo: hi") || !strings.Contains(answer, "5") {
		t.Fatalf("answer %q", answer)
	}
	if names := srv.Requests()[0].ToolNames(); strings.Join(names, ",") != "ev__echo,ev__get-sum" {
		t.Fatalf("tools offered %v", names)
	}
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallStart && e.Meta.ToolType != "mcp" {
			t.Fatalf("toolType %q", e.Meta.ToolType)
		}
	}
}

func TestAgentWithEverythingOverHTTPSurvivesARestart(t *testing.T) {
	peer := peers.StartEverything(t, "streamableHttp")
	srv := llmtest.NewServer(t, everythingScript("ev"))
	s := mcpAgentStore(t, srv.URL, []any{map[string]any{"type": "mcp", "name": "ev",
		"config": map[string]any{"server": fmt.Sprintf("http://%s/mcp", peer.Addr()), "tools": []any{"echo", "get-sum"}, "connectTimeout": "3s", "timeout": "5s"}}})
	answer, _ := runAgent(t, s)
	if !strings.Contains(answer, "Echo: hi") || !strings.Contains(answer, "5") {
		t.Fatalf("answer %q", answer)
	}
	// The server dies: the run still answers, with the failure as the tool result.
	peer.Kill()
	answer, _ = runAgent(t, s)
	if !strings.Contains(answer, "Error (") {
		t.Fatalf("after the server died: %q", answer)
	}
	// Back on the same port: the next calls reconnect.
	peer.Start()
	deadline := 0
	for {
		answer, _ = runAgent(t, s)
		if strings.Contains(answer, "Echo: hi") || deadline > 3 {
			break
		}
		deadline++
	}
	if !strings.Contains(answer, "Echo: hi") || !strings.Contains(answer, "5") {
		t.Fatalf("after the restart: %q", answer)
	}
}

// TestAgentSelfMode: server "self" lists and reads this process's chains
// through the store's own MCP server, in process.
func TestAgentSelfMode(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		switch res := r.ToolResults(); {
		case len(res) == 0:
			return llmtest.Calls(llmtest.Call("chains__list_rule_chains", `{}`))
		case r.Turn() == 1:
			return llmtest.Calls(llmtest.Call("chains__get_rule_chain", `{"id":"mcp-user"}`))
		default:
			return llmtest.Reply("read: " + res[0].Content)
		}
	}))
	s := mcpAgentStore(t, srv.URL, []any{map[string]any{"type": "mcp", "name": "chains",
		"config": map[string]any{"server": "self", "tools": []any{"list_rule_chains", "get_rule_chain"}}}})
	answer, _ := runAgent(t, s)
	list := srv.Requests()[1].ToolResults()[0].Content
	if !strings.Contains(list, "mcp-user") || !strings.Contains(answer, `"systemPrompt"`) {
		t.Fatalf("list %q\nanswer %q", list, answer)
	}
}
