package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// apiEnv is the real server over a folder of test chains, with the
// scripted LLM behind its agents, listening on a loopback port.
type apiEnv struct {
	t     *testing.T
	llm   *llmtest.Server
	dir   string
	store *Store
	base  string
	opts  Options
}

// The test agents tell the scripted LLM who they are by their system
// prompt; the script answers each as the tests need.
const (
	promptChat   = "You are the chat agent."
	promptTools  = "You are the tools agent."
	promptHelper = "You are the helper agent."
	promptSlow   = "You are the slow agent."
	promptBroken = "You are the broken agent."
	promptPause  = "You are the pausing agent."
	promptGuard  = "You are the guarded agent."
	promptShell  = "You are the shell agent."
	promptExact  = "You are the exact-approval agent."
	promptDouble = "You are the double agent."
	promptRepeat = "You are the repeating agent."
	promptAgain  = "You are the again agent."
)

func apiScript() llmtest.Script {
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptChat), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if strings.Contains(r.LastUserText(), "think") {
				return llmtest.Response{Reasoning: "Let me think about it.", Text: "Thought it through."}
			}
			return llmtest.Reply("Hello! You said: " + r.LastUserText())
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptTools), Script: llmtest.ScriptFunc(toolsAgent)},
		llmtest.Rule{Match: llmtest.SystemContains(promptHelper), Script: llmtest.Always(llmtest.Reply("The helper did its part."))},
		llmtest.Rule{Match: llmtest.SystemContains(promptSlow), Script: llmtest.Always(llmtest.Response{
			Text: strings.Repeat("slow words ", 40), ChunkSize: 5, ChunkDelay: 100 * time.Millisecond})},
		llmtest.Rule{Match: llmtest.SystemContains(promptPause), Script: llmtest.Always(llmtest.Response{
			Text: "after a pause", ChunkSize: 100, ChunkDelay: 700 * time.Millisecond})},
		llmtest.Rule{Match: llmtest.SystemContains(promptGuard), Script: llmtest.ScriptFunc(guardedAgent)},
		llmtest.Rule{Match: llmtest.SystemContains(promptShell), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			commands := []string{"echo hello", "echo hello", "echo other"}
			if n := r.Turn(); n < len(commands) {
				return llmtest.Calls(llmtest.Call("bash", `{"command":"`+commands[n]+`"}`))
			}
			res := r.ToolResults()
			return llmtest.Reply("last: " + res[len(res)-1].Content)
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptExact), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			calls := []string{`{"command":"echo hi"}`, `{"command":"echo hi"}`, `{"command":"echo hi > out.txt"}`,
				`{"command":"echo hi","work_dir":"sub"}`, `{"command":"GIT_DIR=x echo hi"}`}
			if n := r.Turn(); n < len(calls) {
				return llmtest.Calls(llmtest.Call("bash", calls[n]))
			}
			return llmtest.Reply("done")
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptDouble), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				var parts []string
				for _, m := range res {
					parts = append(parts, m.Content)
				}
				return llmtest.Reply("Both: " + strings.Join(parts, " | "))
			}
			return llmtest.Calls(llmtest.Call("lookup", `{"key":"A-1"}`), llmtest.Call("lookup", `{"key":"B-2"}`))
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptRepeat), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			keys := []string{"A-1", "A-1", "B-2"}
			if n := r.Turn(); n < len(keys) {
				return llmtest.Calls(llmtest.Call("lookup", `{"key":"`+keys[n]+`"}`))
			}
			return llmtest.Reply("last: " + r.ToolResults()[0].Content)
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptAgain), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			keys := []string{"A-1", "B-2", "A-1"}
			if n := r.Turn(); n < len(keys) {
				return llmtest.Calls(llmtest.Call("lookup", `{"key":"`+keys[n]+`"}`))
			}
			return llmtest.Reply("last: " + r.ToolResults()[0].Content)
		})},
		llmtest.Rule{Match: llmtest.SystemContains(promptBroken), Script: llmtest.Always(llmtest.Response{
			Status: http.StatusBadRequest, ErrorMessage: "the model refuses this request"})},
	)
}

// toolsAgent calls what the user asks for, then answers with what came back.
func toolsAgent(r *llmtest.Request) llmtest.Response {
	if res := r.ToolResults(); len(res) > 0 {
		var parts []string
		for _, m := range res {
			parts = append(parts, m.Content)
		}
		return llmtest.Reply("Done: " + strings.Join(parts, " | "))
	}
	u := r.LastUserText()
	switch {
	case strings.Contains(u, "lookup"):
		return llmtest.Calls(llmtest.Call("lookup", `{"key":"A-1"}`))
	case strings.Contains(u, "confirm"):
		return llmtest.Calls(llmtest.Call("lookup", `{"key":"B-2"}`), llmtest.Call("confirm", `{"question":"Ship it?"}`))
	case strings.Contains(u, "delegate"):
		return llmtest.Calls(llmtest.Call("helper", `{"message":"do your part"}`))
	}
	return llmtest.Reply("Nothing to do.")
}

// guardedAgent calls a tool that needs approval, or a form tool, then
// answers with what came back.
func guardedAgent(r *llmtest.Request) llmtest.Response {
	if res := r.ToolResults(); len(res) > 0 {
		return llmtest.Reply("Result: " + res[len(res)-1].Content)
	}
	if strings.Contains(r.LastUserText(), "ask") {
		return llmtest.Calls(llmtest.Call("ask_person", `{"question":"Which size?"}`))
	}
	return llmtest.Calls(llmtest.Call("lookup", `{"key":"A-1"}`))
}

// agentNode is an ai/agent node config for the test chains.
func agentNode(prompt string, extra map[string]any) map[string]any {
	cfg := map[string]any{"systemPrompt": prompt, "maxRetries": 0, "maxStep": 5}
	for k, v := range extra {
		cfg[k] = v
	}
	return map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": cfg}
}

func testChains() map[string]string {
	return map[string]string{
		"chat":   chainDSL("chat", "Chat", map[string]any{"description": "Chats."}, agentNode(promptChat, nil)),
		"helper": chainDSL("helper", "Helper", map[string]any{"description": "Helps."}, agentNode(promptHelper, nil)),
		"slow":   chainDSL("slow", "Slow", nil, agentNode(promptSlow, nil)),
		"broken": chainDSL("broken", "Broken", nil, agentNode(promptBroken, nil)),
		"pause":  chainDSL("pause", "Pause", nil, agentNode(promptPause, nil)),
		"lookup": jsDSL("lookup", "Lookup", nil, `return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};`),
		"guarded": chainDSL("guarded", "Guarded", nil, agentNode(promptGuard, map[string]any{
			"approval": map[string]any{"tools": []any{"look*"}, "timeout": "3s"},
			"tools": []any{
				map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
					"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}},
				map[string]any{"type": "rulechain", "name": "ask_person", "description": "Asks the person.", "targetId": "lookup",
					"parameters":     map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}},
					"responseSchema": map[string]any{"type": "object", "properties": map[string]any{"size": map[string]any{"enum": []any{"S", "M", "L"}}}, "required": []any{"size"}}},
			}})),
		"tools": chainDSL("tools", "Tools", nil, agentNode(promptTools, map[string]any{"tools": []any{
			map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}},
			map[string]any{"type": "agent", "name": "helper", "targetId": "helper"},
		}})),
	}
}

// newAPIEnv writes the test chains and serves them.
func newAPIEnv(t *testing.T, opts Options) *apiEnv {
	t.Helper()
	return newAPIEnvWith(t, opts, StoreOptions{})
}

// newAPIEnvWith is newAPIEnv with a store opened with so.
func newAPIEnvWith(t *testing.T, opts Options, so StoreOptions) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, llm: llmtest.NewServer(t, apiScript()), dir: t.TempDir()}
	for id, dsl := range testChains() {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStoreWith(e.dir, NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"}), so)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	opts.Store = e.store
	e.opts = opts
	e.base = serveLoopback(t, Handler(opts))
	return e
}

// do sends a request and returns the status and body.
func (e *apiEnv) do(method, path string, body any, hdr ...string) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.Token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// sseEvents splits an SSE body into its data payloads, checking the
// framing AG-UI clients need: LF only, one data line per event.
func sseEvents(t *testing.T, body []byte) [][]byte {
	t.Helper()
	if bytes.Contains(body, []byte("\r")) {
		t.Fatalf("CR in the event stream")
	}
	var out [][]byte
	for _, frame := range bytes.Split(body, []byte("\n\n")) {
		frame = bytes.TrimSpace(frame)
		if len(frame) == 0 || frame[0] == ':' {
			continue
		}
		data, ok := bytes.CutPrefix(frame, []byte("data: "))
		if !ok || bytes.Contains(data, []byte("\n")) {
			t.Fatalf("bad frame %q", frame)
		}
		out = append(out, data)
	}
	return out
}

// findRequest returns the first LLM request whose last user text holds s.
func findRequest(e *apiEnv, s string) *llmtest.Request {
	for _, r := range e.llm.Requests() {
		if strings.Contains(r.LastUserText(), s) {
			return r
		}
	}
	return nil
}

// llmAborted waits (a little) for the scripted LLM to see a request of the
// agent with system prompt prompt go away before its answer was complete.
func llmAborted(e *apiEnv, prompt string) bool {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range e.llm.Aborted() {
			if strings.Contains(r.System(), prompt) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
