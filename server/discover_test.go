package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// canaryServer is an mcp entry whose stdio "server" only writes canary:
// what a discover would run of it.
func canaryServer(canary string) map[string]any {
	return map[string]any{"type": "mcp", "name": "x", "config": map[string]any{
		"command": "/bin/sh", "args": []string{"-c", "echo pwned > " + canary}, "connectTimeout": "2s"}}
}

// A discover starts a stdio server's process: a read-only server refuses
// it (403, nothing runs) but still discovers what starts nothing ("self",
// HTTP servers).
func TestDiscoverStdioRefusedWhenReadOnly(t *testing.T) {
	e := guardEnv(t, Options{}, StoreOptions{ReadOnly: true})
	canary := filepath.Join(t.TempDir(), "canary")
	code, body, _ := e.do("POST", "/api/v1/tools/mcp/discover", canaryServer(canary))
	if code != 403 || !strings.Contains(string(body), "read-only") || !strings.Contains(string(body), "would start a process") {
		t.Fatalf("stdio discover on a read-only server: %d %s", code, body)
	}
	if _, err := os.Stat(canary); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused discover ran its command: %v", err)
	}
	code, body, _ = e.do("POST", "/api/v1/tools/mcp/discover", map[string]any{"type": "mcp", "name": "me", "config": map[string]any{"server": "self", "tools": []string{"list_rule_chains"}}})
	if code != 200 {
		t.Fatalf("self discover on a read-only server: %d %s", code, body)
	}
}

// What a discover starts runs at least at the operator's sandbox floor,
// even for an entry that asks for no sandbox: its process cannot write
// outside its working directory. Without a floor, the same entry writes
// its canary (the check can fail).
func TestDiscoverStdioRunsAtTheSandboxFloor(t *testing.T) {
	if st := sandbox.Describe(); !st.Available {
		if os.Getenv("CI") != "" {
			t.Fatalf("the kernel sandbox is unavailable: %s", st.Reason)
		}
		t.Skipf("the kernel sandbox is unavailable: %s", st.Reason)
	}
	for _, floor := range []string{"", "required", "best-effort"} {
		e, _ := newFloorEnv(t, llmtest.Always(llmtest.Reply("ok")), components.SandboxFloor{Mode: sandbox.Mode(floor)}, nil)
		canary := filepath.Join(t.TempDir(), "canary")
		code, body := e.discover(canaryServer(canary))
		_, err := os.Stat(canary)
		if floor == "" {
			if err != nil {
				t.Fatalf("without a floor the canary server did not run (%d %s): the test proves nothing", code, body)
			}
			continue
		}
		if code != 502 || !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("floor %s: %d %s; canary: %v", floor, code, body, err)
		}
	}
}

// discover posts an entry to POST /api/v1/tools/mcp/discover.
func (e *govEnv) discover(entry map[string]any) (int, string) {
	e.t.Helper()
	a := &apiEnv{t: e.t, base: e.base}
	code, body, _ := a.do("POST", "/api/v1/tools/mcp/discover", entry)
	return code, string(body)
}
