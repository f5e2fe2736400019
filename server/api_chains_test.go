package server

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestChainsAPI(t *testing.T) {
	e := newAPIEnv(t, Options{})

	code, body, _ := e.do("GET", "/api/v1/chains", nil)
	var list []ChainInfo
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list) != len(testChains()) {
		t.Fatalf("list: %d %s", code, body)
	}
	for _, c := range list {
		if c.ID == "tools" && (!c.IsAgent || !c.Deployed || c.File != filepath.Join(e.dir, "tools.json")) {
			t.Fatalf("tools: %+v", c)
		}
		if c.ID == "lookup" && c.IsAgent {
			t.Fatalf("lookup is not an agent: %+v", c)
		}
	}

	// GET returns the DSL exactly as deployed.
	code, body, _ = e.do("GET", "/api/v1/chains/lookup", nil)
	if code != 200 || string(body) != testChains()["lookup"] {
		t.Fatalf("get: %d %s", code, body)
	}
	if code, body, _ = e.do("GET", "/api/v1/chains/nope", nil); code != 404 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("get unknown: %d %s", code, body)
	}

	// PUT a new chain: deployed, saved, runnable.
	upper := jsDSL("", "Upper", nil, `return {msg: {upper: msg.text.toUpperCase()}, metadata: metadata, msgType: msgType};`)
	code, body, _ = e.do("PUT", "/api/v1/chains/upper", upper)
	if code != 200 || !strings.Contains(string(body), `"id":"upper"`) || !strings.Contains(string(body), `"deployed":true`) {
		t.Fatalf("put: %d %s", code, body)
	}
	saved, _ := os.ReadFile(filepath.Join(e.dir, "upper.json"))
	if id, _ := ChainID(saved); id != "upper" {
		t.Fatalf("saved file: %s", saved)
	}
	code, body, _ = e.do("POST", "/api/v1/chains/upper/run", map[string]any{"input": map[string]any{"text": "abc"}})
	if code != 200 || !strings.Contains(string(body), `\"upper\":\"ABC\"`) {
		t.Fatalf("run: %d %s", code, body)
	}

	// An invalid PUT: 400 with every problem at its path; the running
	// version and the file stay as they were.
	bad := `{"ruleChain":{"id":"upper"},"metadata":{"nodes":[{"id":"a","type":"nope"},{"id":"b","type":"ai/agent","configuration":{"maxStep":0}}],"connections":[{"fromId":"a","toId":"zz","type":"Success"}]}}`
	code, body, _ = e.do("PUT", "/api/v1/chains/upper", bad)
	var refusal apiError
	if code != 400 || json.Unmarshal(body, &refusal) != nil || len(refusal.Problems) < 3 {
		t.Fatalf("invalid put: %d %s", code, body)
	}
	paths := map[string]bool{}
	for _, p := range refusal.Problems {
		paths[p.Path] = true
	}
	for _, want := range []string{"metadata.nodes[0].type", "metadata.nodes[1].configuration.maxStep", "metadata.connections[0].toId"} {
		if !paths[want] {
			t.Errorf("no problem at %s: %s", want, body)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(e.dir, "upper.json")); string(after) != string(saved) {
		t.Fatal("a refused PUT changed the file")
	}
	if code, body, _ = e.do("POST", "/api/v1/chains/upper/run", map[string]any{"input": map[string]any{"text": "still"}}); code != 200 || !strings.Contains(string(body), "STILL") {
		t.Fatalf("the old version after a refused put: %d %s", code, body)
	}

	// Ids are checked: no traversal, no body id other than the path's, no
	// file holding another chain.
	for _, tc := range []struct{ id, dsl, says string }{
		{"..%2Fescape", upper, "invalid chain id"},
		{".hidden", upper, "invalid chain id"},
		{"other", jsDSL("upper", "U", nil, "return {msg: msg};"), `saved as \"other\"`},
	} {
		code, body, _ := e.do("PUT", "/api/v1/chains/"+tc.id, tc.dsl)
		if code != 400 || !strings.Contains(string(body), tc.says) {
			t.Errorf("PUT %s: %d %s", tc.id, code, body)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.dir), "escape.json")); err == nil {
		t.Fatal("a chain was written outside the folder")
	}

	// Warnings do not refuse: a call to a chain not deployed yet.
	caller := chainDSL("caller", "Caller", nil, agentNode(promptTools, map[string]any{"tools": []any{map[string]any{"type": "agent", "targetId": "later"}}}))
	code, body, _ = e.do("PUT", "/api/v1/chains/caller", caller)
	if code != 200 || !strings.Contains(string(body), `"warnings":[{"path":"metadata.nodes[0].configuration.tools[0].targetId"`) {
		t.Fatalf("put with a warning: %d %s", code, body)
	}

	// DELETE undeploys and removes the file.
	if code, body, _ = e.do("DELETE", "/api/v1/chains/upper", nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "upper.json")); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}
	if code, _, _ = e.do("POST", "/api/v1/chains/upper/run", map[string]any{"input": "x"}); code != 404 {
		t.Fatalf("run after delete: %d", code)
	}
	if code, _, _ = e.do("DELETE", "/api/v1/chains/upper", nil); code != 404 {
		t.Fatalf("second delete: %d", code)
	}
}

// Edits made to the folder by hand are picked up; a broken file is
// reported and leaves the running version alone; a removed file undeploys
// its chain.
func TestChainsFolderWatch(t *testing.T) {
	e := newAPIEnv(t, Options{})
	if err := e.store.Watch(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, "lookup.json")
	run := func() string {
		_, body, _ := e.do("POST", "/api/v1/chains/lookup/run", map[string]any{"input": map[string]any{"key": "k"}})
		return string(body)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// An editor writes a new version in two steps.
	v2 := jsDSL("lookup", "Lookup", nil, `return {msg: {found: "v2 " + msg.key}, metadata: metadata, msgType: msgType};`)
	if err := os.WriteFile(path, []byte(v2[:20]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the edited chain", func() bool { return strings.Contains(run(), "v2 k") })

	// A broken file: reported, the running version stays.
	if err := os.WriteFile(path, []byte(`{"ruleChain":{"id":"lookup"},"metadata":{"nodes":[{"id":"x","type":"nope"}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the broken file to be reported", func() bool {
		_, body, _ := e.do("GET", "/api/v1/chains", nil)
		return strings.Contains(string(body), `unknown component type \"nope\"`)
	})
	if !strings.Contains(run(), "v2 k") {
		t.Fatal("a broken file replaced the running chain")
	}

	// A new file in a new subfolder is deployed; removing it undeploys it.
	sub := filepath.Join(e.dir, "more")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "extra.json"), []byte(jsDSL("extra", "Extra", nil, "return {msg: {extra: true}, metadata: metadata, msgType: msgType};")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the new chain", func() bool { _, ok := e.store.Engine("extra"); return ok })
	if err := os.Remove(filepath.Join(sub, "extra.json")); err != nil {
		t.Fatal(err)
	}
	waitFor("the removed chain to go", func() bool { _, ok := e.store.Engine("extra"); return !ok })
}
