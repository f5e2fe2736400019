package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/sessions"
)

// A read-only server runs its chains and refuses to change them over the
// API and MCP; the watched folder still changes them.
func TestReadOnlyServer(t *testing.T) {
	e := newAPIEnvWith(t, Options{}, StoreOptions{ReadOnly: true})
	path := filepath.Join(e.dir, "lookup.json")
	before, _ := os.ReadFile(path)

	v2 := jsDSL("lookup", "Lookup", nil, `return {msg: {found: "v2 " + msg.key}, metadata: metadata, msgType: msgType};`)
	code, body, _ := e.do("PUT", "/api/v1/chains/lookup", v2)
	if code != 403 || !strings.Contains(string(body), "read-only") {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if code, body, _ = e.do("DELETE", "/api/v1/chains/lookup", nil); code != 403 || !strings.Contains(string(body), "read-only") {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused change touched the file")
	}
	if _, ok := e.store.Engine("lookup"); !ok {
		t.Fatal("a refused DELETE undeployed the chain")
	}
	if _, err := e.store.Save("other", []byte(v2)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Save: %v", err)
	}
	if code, body, _ = e.do("GET", "/healthz", nil); code != 200 || !strings.Contains(string(body), `"readOnly":true`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
	code, body, _ = e.do("POST", "/api/v1/chains/lookup/run", map[string]any{"input": map[string]any{"key": "k"}})
	if code != 200 {
		t.Fatalf("a read-only server does not run its chains: %d %s", code, body)
	}

	// MCP clients are not offered save_rule_chain.
	tools := e.store.MCP().ListTools()
	if _, ok := tools[mcpserve.ToolSaveChain]; ok {
		t.Error("save_rule_chain offered by a read-only server")
	}
	if _, ok := tools[mcpserve.ToolListChains]; !ok {
		t.Error("list_rule_chains missing")
	}

	// The folder is still the operator's way to change chains.
	if err := e.store.Watch(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body, _ = e.do("POST", "/api/v1/chains/lookup/run", map[string]any{"input": map[string]any{"key": "k"}})
		if strings.Contains(string(body), "v2 k") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the edited file was not deployed: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The writable default offers save_rule_chain.
func TestWritableServerOffersSave(t *testing.T) {
	e := newAPIEnv(t, Options{})
	if _, ok := e.store.MCP().ListTools()[mcpserve.ToolSaveChain]; !ok {
		t.Error("save_rule_chain missing")
	}
	if _, body, _ := e.do("GET", "/healthz", nil); !strings.Contains(string(body), `"readOnly":false`) {
		t.Errorf("healthz: %s", body)
	}
}

// A read-only server also refuses the session routes that change
// sessions (DELETE, PUT model), while runs go on writing their sessions:
// the API changes nothing but through runs.
func TestReadOnlyServerSessions(t *testing.T) {
	llm := llmtest.NewServer(t, sessionScript())
	dir := t.TempDir()
	memo := memoChain("memo", map[string]any{"scope": "user", "allowedModels": []any{"small-model"}})
	if err := os.WriteFile(filepath.Join(dir, "memo.json"), []byte(memo), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := NewConfig(map[string]string{"llm_url": llm.URL, "api_key": "sk-test", "model": "test-model"})
	st := sessions.NewMemory()
	components.RegisterSessions(&cfg, st)
	store, errs := OpenStoreWith(dir, cfg, StoreOptions{ReadOnly: true})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	e := &apiEnv{t: t, llm: llm, dir: dir, store: store, opts: Options{Store: store}}
	e.base = serveLoopback(t, Handler(e.opts))

	e.runOnce("memo", map[string]any{"input": "remember the milk", "metadata": map[string]any{"userId": "alice"}}, "success")
	const id = "memo:user:alice"
	if code, body, _ := e.do("DELETE", "/api/v1/sessions/"+id, nil); code != 403 || !strings.Contains(string(body), "read-only") {
		t.Errorf("DELETE session: %d %s", code, body)
	}
	if code, body, _ := e.do("PUT", "/api/v1/sessions/"+id+"/model", map[string]any{"model": "small-model"}); code != 403 ||
		!strings.Contains(string(body), "read-only") {
		t.Errorf("PUT session model: %d %s", code, body)
	}
	rec, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("the refused DELETE removed the session: %v", err)
	}
	if rec.Model != "" {
		t.Errorf("the refused PUT set the model %q", rec.Model)
	}
	// Reading stays open, and runs still write their sessions.
	if code, body, _ := e.do("GET", "/api/v1/sessions/"+id, nil); code != 200 || !strings.Contains(string(body), "remember the milk") {
		t.Errorf("GET session: %d %s", code, body)
	}
	e.runOnce("memo", map[string]any{"input": "and the eggs", "metadata": map[string]any{"userId": "alice"}}, "success")
	if _, body, _ := e.do("GET", "/api/v1/sessions/"+id, nil); !strings.Contains(string(body), "and the eggs") {
		t.Errorf("a run on a read-only server did not write its session: %s", body)
	}
	if _, body, _ := e.do("GET", "/healthz", nil); !strings.Contains(string(body), `"readOnly":true`) {
		t.Errorf("healthz: %s", body)
	}
}
