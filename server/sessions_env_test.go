package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

// The session test agents, told apart by their system prompts.
const (
	promptMemo     = "You are the memo agent."
	promptSessTool = "You are the session tools agent."
	// promptNoCompaction is a compaction prompt the LLM always fails.
	promptNoCompaction = "Compact this, if you can."
)

// sessionScript answers the memo agent with what it was told, the tools
// agent with tool calls, and the session's own requests (compaction, tool
// summaries) with text built from what they were given, so that tests can
// assert what reached the model.
func sessionScript() llmtest.Script {
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptNoCompaction), Script: llmtest.Always(llmtest.Response{
			Status: 500, ErrorMessage: "the summariser is down"})},
		llmtest.Rule{Match: llmtest.SystemContains(sessions.CompactionPrompt), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			var said []string
			for _, line := range strings.Split(r.LastUserText(), "\n") {
				if s, ok := strings.CutPrefix(line, "[user] "); ok {
					said = append(said, s)
				}
			}
			return llmtest.Reply("The user said: " + strings.Join(said, "; "))
		})},
		llmtest.Rule{Match: llmtest.SystemContains(sessions.ToolSummaryPrompt), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			tool, _, _ := strings.Cut(strings.TrimPrefix(r.LastUserText(), "Tool: "), "\n")
			return llmtest.Reply("short result of " + tool)
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptMemo), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if strings.Contains(r.LastUserText(), "hang") {
				return llmtest.Response{Hang: true}
			}
			return llmtest.Reply("Noted: " + r.LastUserText())
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptSessTool), Script: llmtest.ScriptFunc(sessToolsAgent)},
	)
}

// sessToolsAgent is the tools agent of the API tests (toolsAgent), with
// two more tools: one that answers a large result, one whose chain is
// missing.
func sessToolsAgent(r *llmtest.Request) llmtest.Response {
	if len(r.ToolResults()) == 0 {
		switch u := r.LastUserText(); {
		case strings.Contains(u, "big"):
			return llmtest.Calls(llmtest.Call("big", `{}`))
		case strings.Contains(u, "missing"):
			return llmtest.Calls(llmtest.Call("missing", `{}`))
		}
	}
	return toolsAgent(r)
}

// memoChain is an agent chain with the given session object.
func memoChain(id string, session map[string]any) string {
	return chainDSL(id, id, nil, agentNode(promptMemo, map[string]any{"session": session}))
}

// toolsSessionChain is the tools agent with a session: lookup, a chain
// that answers a large result (big), and a tool whose chain is missing.
func toolsSessionChain(id string, session map[string]any) string {
	obj := map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}
	return chainDSL(id, id, nil, agentNode(promptSessTool, map[string]any{"session": session, "tools": []any{
		map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup", "parameters": obj},
		map[string]any{"type": "rulechain", "name": "big", "description": "Answers a lot.", "targetId": "big"},
		map[string]any{"type": "rulechain", "name": "missing", "description": "Is not there.", "targetId": "no-such-chain"},
	}}))
}

// newSessionEnv serves chains (id -> DSL, plus the lookup and big tool
// chains) with st as the session store and the session script as LLM.
func newSessionEnv(t *testing.T, st sessions.Store, chains map[string]string) *apiEnv {
	t.Helper()
	return newSessionEnvLLM(t, st, chains, llmtest.NewServer(t, sessionScript()))
}

func newSessionEnvLLM(t *testing.T, st sessions.Store, chains map[string]string, llm *llmtest.Server) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, llm: llm, dir: t.TempDir()}
	all := map[string]string{
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};`),
		"big":    jsDSL("big", "Big", nil, `return {msg: "R".repeat(3000), metadata: metadata, msgType: msgType};`),
	}
	for id, dsl := range chains {
		all[id] = dsl
	}
	for id, dsl := range all {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"})
	components.RegisterSessions(&cfg, st)
	var errs []error
	e.store, errs = OpenStore(e.dir, cfg)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	e.opts = Options{Store: e.store}
	e.base = serveLoopback(t, Handler(e.opts))
	return e
}

// runOnce posts a /run and returns its answer, failing the test unless
// the outcome is want.
func (e *apiEnv) runOnce(chain string, body map[string]any, want string) runAnswer {
	e.t.Helper()
	status, b, _ := e.do("POST", "/api/v1/chains/"+chain+"/run", body)
	var ans runAnswer
	if err := json.Unmarshal(b, &ans); err != nil || status != 200 {
		e.t.Fatalf("run %s: %d %s", chain, status, b)
	}
	if ans.Outcome != want {
		e.t.Fatalf("run %s: outcome %s (%s %s), want %s", chain, ans.Outcome, ans.ErrorCode, ans.Error, want)
	}
	return ans
}

// say runs chain on one user message in a thread.
func (e *apiEnv) say(chain, thread, text string) runAnswer {
	e.t.Helper()
	return e.runOnce(chain, map[string]any{"input": text, "threadId": thread}, "success")
}

// agentRequest returns the last request of the agent with system prompt
// prompt (not the session's own requests).
func agentRequest(e *apiEnv, prompt string) *llmtest.Request {
	e.t.Helper()
	reqs := e.llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].System(), prompt) {
			return reqs[i]
		}
	}
	e.t.Fatalf("no LLM request of %q", prompt)
	return nil
}

// conv renders a request's messages as lines to compare: role, text, tool
// calls by name and arguments, tool results by the name of their call.
// It fails the test when a tool result does not answer a call of the
// assistant message before it, or a call goes unanswered.
func conv(t *testing.T, r *llmtest.Request) []string {
	t.Helper()
	var out []string
	names := map[string]string{}
	var open map[string]bool
	for _, m := range r.Messages {
		if m.Role != "tool" && len(open) > 0 {
			t.Errorf("tool calls %v unanswered before a %s message", open, m.Role)
			open = nil
		}
		switch m.Role {
		case "assistant":
			line := "assistant: " + m.Content
			open = map[string]bool{}
			for _, tc := range m.ToolCalls {
				names[tc.ID] = tc.Name
				open[tc.ID] = true
				line += fmt.Sprintf(" [%s %s]", tc.Name, tc.Arguments)
			}
			out = append(out, line)
		case "tool":
			if !open[m.ToolCallID] {
				t.Errorf("tool result %s answers no open call (orphan): %q", m.ToolCallID, m.Content)
			}
			delete(open, m.ToolCallID)
			out = append(out, "tool "+names[m.ToolCallID]+": "+m.Content)
		default:
			out = append(out, m.Role+": "+m.Content)
		}
	}
	if len(open) > 0 {
		t.Errorf("tool calls %v unanswered at the end", open)
	}
	return out
}

// wantConv compares a request's messages with want.
func wantConv(t *testing.T, r *llmtest.Request, want ...string) {
	t.Helper()
	got := conv(t, r)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("messages sent to the LLM:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// waitRequest waits for the LLM to receive a request whose last user text
// holds s.
func waitRequest(e *apiEnv, s string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if findRequest(e, s) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.t.Fatalf("the LLM never got %q", s)
}
