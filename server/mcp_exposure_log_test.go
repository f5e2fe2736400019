package server

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/proctest"
)

// TestMCPExposureLoggedWhereServed: a store that serves no MCP (ruleagent
// run) logs nothing about which chains MCP would offer; the first
// transport that serves the tools (MCPHTTP, ServeStdio) logs what was
// decided while the chains loaded, once, and decisions made while it
// serves are logged as they are made.
func TestMCPExposureLoggedWhereServed(t *testing.T) {
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join("..", "chains", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logs proctest.Buffer
	store, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	defer store.Close()
	const withheld = `msg="mcp: chain not exposed: other chains bind its parameters, and an MCP client would choose them" chain=order-status bound=[userId]`
	if strings.Contains(logs.String(), "mcp:") {
		t.Fatalf("a store that serves no MCP logged about it:\n%s", logs.String())
	}
	if store.mcp.Offers("order-status") {
		t.Fatal("order-status, whose userId support-agent binds, is offered")
	}

	store.MCPHTTP()
	store.MCPHTTP()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = store.ServeStdio(ctx, strings.NewReader(""), &bytes.Buffer{}, nil)
	if n := strings.Count(logs.String(), withheld); n != 1 {
		t.Fatalf("served: the withheld chain is logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "mcp:"); n != 1 {
		t.Fatalf("served: %d mcp lines, want 1:\n%s", n, logs.String())
	}

	// While serving: a chain that binds the parameter of an offered chain
	// withdraws it, and says so at once.
	exposed := `{"ruleChain":{"id":"lookup","name":"Lookup","additionalInfo":{"mcp":true}},"metadata":{"nodes":[{"id":"n","type":"jsTransform","name":"Echo","configuration":{"jsScript":"return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`
	if _, err := store.Deploy([]byte(exposed), ""); err != nil {
		t.Fatal(err)
	}
	if !store.mcp.Offers("lookup") {
		t.Fatal("lookup is not offered")
	}
	binder := `{"ruleChain":{"id":"binder","name":"Binder"},"metadata":{"nodes":[{"id":"a","type":"ai/agent","name":"A","configuration":{"url":"http://127.0.0.1:1/v1","model":"m",
	  "tools":[{"type":"rulechain","name":"look","targetId":"lookup","parameters":{"type":"object","properties":{"who":{"type":"string"}}},"bind":{"who":"metadata.userId"}}]}}]}}`
	if _, err := store.Deploy([]byte(binder), ""); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "chain=lookup bound=[who]"); n != 1 {
		t.Fatalf("a chain withheld while serving is logged %d times, want once:\n%s", n, logs.String())
	}
}
