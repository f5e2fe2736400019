package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// The MCP tests share one folder of chains and one scripted model, which
// tells the agents apart by their system prompts.
const (
	readerNotes  = "the notes say: ship on Friday"
	readerAnswer = "The notes say we ship on Friday, so the release is due at the end of this week as planned."
)

// mcpModel answers every agent of mcpChains.
func mcpModel(t *testing.T) *llmtest.Server {
	t.Helper()
	return llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("You are helper."), Script: llmtest.Always(llmtest.Reply("helper answer"))},
		llmtest.Rule{Match: llmtest.SystemContains("You are reader."), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("read", `{"path":"notes.txt"}`)),
			// Slow enough that text progress shows between tool calls, fast
			// enough for the tests' budget: 22 chunks of 5 runes, 15ms each.
			llmtest.Response{Text: readerAnswer, ChunkSize: 5, ChunkDelay: 15 * time.Millisecond},
		)},
		llmtest.Rule{Match: llmtest.SystemContains("You are weather."), Script: llmtest.Always(llmtest.Reply("sunny"))},
		llmtest.Rule{Match: llmtest.SystemContains("You are trigger."), Script: triggerScript()},
	))
}

// triggerScript deploys, through save_rule_chain, a chain whose
// description changes on every call, so that each call changes the tool
// list; then it says so.
func triggerScript() llmtest.Script {
	var n atomic.Int64
	return llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if len(r.ToolResults()) > 0 {
			return llmtest.Reply("The tool list changed.")
		}
		dsl := jsDSL("conformance_toggle", "Toggle", map[string]any{"mcp": true, "description": fmt.Sprintf("Deployed by call %d.", n.Add(1))},
			"return {msg: 'toggled', metadata: metadata, msgType: msgType};")
		args, _ := json.Marshal(map[string]string{"dsl": dsl})
		return llmtest.Calls(llmtest.Call("self__save_rule_chain", string(args)))
	})
}

// agentDSL is a one-node agent chain.
func agentDSL(id, name string, info map[string]any, node map[string]any) string {
	cfg := map[string]any{"url": "${global.llm_url}", "model": "${global.model}", "key": "sk-test", "retryBackoff": "1ms"}
	for k, v := range node {
		cfg[k] = v
	}
	return chainDSL(id, name, info, map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": cfg})
}

// jsDSL is a one-node business chain running script.
func jsDSL(id, name string, info map[string]any, script string) string {
	return chainDSL(id, name, info, map[string]any{"id": "js", "type": "jsTransform", "name": "JS", "configuration": map[string]any{"jsScript": script}})
}

func chainDSL(id, name string, info map[string]any, node map[string]any) string {
	rc := map[string]any{"id": id, "name": name}
	if info != nil {
		rc["additionalInfo"] = info
	}
	b, err := json.MarshalIndent(map[string]any{
		"ruleChain": rc,
		"metadata":  map[string]any{"firstNodeIndex": 0, "nodes": []any{node}, "connections": []any{}},
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// mcpChainsDir holds the test chains. They take their models and the
// reader's workspace from globals: llm_url, slow_llm_url, model, workspace.
const mcpChainsDir = "testdata/mcp"

// mcpChains copies the test chains into a new folder (tests save into it)
// and returns it.
func mcpChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(mcpChainsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test chains in %s: %v", mcpChainsDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mcpWorkspace is a workspace holding the notes the reader agent reads.
func mcpWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte(readerNotes), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// mcpEnv is a store of the test chains with their models.
type mcpEnv struct {
	model *llmtest.Server
	hang  *hangingModel
	dir   string
	store *Store
}

// newMCPEnv opens the test chains against the scripted models.
func newMCPEnv(t *testing.T) *mcpEnv { return newMCPEnvWith(t, nil) }

// newMCPEnvWith opens the test chains and extra chain files (file name ->
// DSL) against the scripted models.
func newMCPEnvWith(t *testing.T, extra map[string][]byte) *mcpEnv {
	t.Helper()
	return newMCPEnvOpts(t, extra, StoreOptions{})
}

// newMCPEnvOpts is newMCPEnvWith with the store's options.
func newMCPEnvOpts(t *testing.T, extra map[string][]byte, opts StoreOptions) *mcpEnv {
	t.Helper()
	e := &mcpEnv{model: mcpModel(t), hang: newHangingModel(t), dir: mcpChains(t)}
	for name, dsl := range extra {
		if err := os.WriteFile(filepath.Join(e.dir, name), dsl, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStoreWith(e.dir, NewConfig(e.globals(t)), opts)
	t.Cleanup(e.store.Close)
	if len(errs) > 0 {
		t.Fatalf("loading the test chains: %v", errs)
	}
	return e
}

// fixtureFiles reads chain files (file name -> DSL).
func fixtureFiles(t *testing.T, paths ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// globals are the test chains' ${global.x} values.
func (e *mcpEnv) globals(t *testing.T) map[string]string {
	return map[string]string{"llm_url": e.model.URL, "slow_llm_url": e.hang.URL, "model": "test-model", "workspace": mcpWorkspace(t)}
}

// hangingModel is an LLM that never answers. It reports when a request
// arrives and when its client goes away: that is how the tests see on the
// server side that a run was cancelled.
type hangingModel struct {
	URL     string
	arrived chan struct{}
	gone    chan struct{}
}

func newHangingModel(t *testing.T) *hangingModel {
	t.Helper()
	h := &hangingModel{arrived: make(chan struct{}, 16), gone: make(chan struct{}, 16)}
	closing := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// net/http notices a client going away only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		h.arrived <- struct{}{}
		select {
		case <-r.Context().Done():
			h.gone <- struct{}{}
		case <-closing:
		}
	}))
	t.Cleanup(func() {
		close(closing)
		srv.Close()
	})
	h.URL = srv.URL + "/v1"
	return h
}

// await waits for a signal on ch, failing t after five seconds.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting: %s", what)
	}
}
