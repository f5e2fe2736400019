package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if _, ok := tools[toolSaveChain]; ok {
		t.Error("save_rule_chain offered by a read-only server")
	}
	if _, ok := tools[toolListChains]; !ok {
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
	if _, ok := e.store.MCP().ListTools()[toolSaveChain]; !ok {
		t.Error("save_rule_chain missing")
	}
	if _, body, _ := e.do("GET", "/healthz", nil); !strings.Contains(string(body), `"readOnly":false`) {
		t.Errorf("healthz: %s", body)
	}
}
