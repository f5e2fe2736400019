package server

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruleagent/ruleagent/demo"
)

// GET /v1/models says which chains answer from the built-in demo model:
// those whose agents take the globals the command line points at it, not
// a chain that names its own LLM.
func TestModelsNameTheDemoModel(t *testing.T) {
	dir := t.TempDir()
	chains := map[string]string{
		"on-demo": `{"ruleChain":{"id":"on-demo","name":"On demo"},"metadata":{"nodes":[{"id":"a","type":"ai/agent","configuration":{"systemPrompt":"Hi."}}]}}`,
		"own-llm": `{"ruleChain":{"id":"own-llm","name":"Own"},"metadata":{"nodes":[{"id":"a","type":"ai/agent","configuration":{"url":"http://127.0.0.1:9/v1","model":"m"}}]}}`,
	}
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, errs := OpenStore(dir, NewConfig(map[string]string{"llm_url": demo.URL, "model": demo.Model}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	base := serveLoopback(t, Handler(Options{Store: store}))
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || json.Unmarshal(body, v) != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	var list struct {
		Data []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	get("/v1/models", &list)
	owners := map[string]string{}
	for _, m := range list.Data {
		owners[m.ID] = m.OwnedBy
	}
	if owners["on-demo"] != "ruleagent-demo" || owners["own-llm"] != "ruleagent" {
		t.Fatalf("owners %v", owners)
	}
	var one struct {
		OwnedBy string `json:"owned_by"`
	}
	get("/v1/models/on-demo", &one)
	if one.OwnedBy != "ruleagent-demo" {
		t.Fatalf("model on-demo owned by %q", one.OwnedBy)
	}
}
