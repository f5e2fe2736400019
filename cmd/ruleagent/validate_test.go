package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateCommand(t *testing.T) {
	var out, errb bytes.Buffer
	files, _ := filepath.Glob(repoChain("*.json"))
	if code := run(context.Background(), append([]string{"validate"}, files...), nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "ok:") {
		t.Fatalf("examples: exit %d\n%s%s", code, out.String(), errb.String())
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"ruleChain":{"id":"bad"},"metadata":{"nodes":[{"id":"agent","type":"ai/agent","configuration":{"url":"http://x/v1","model":"m",
	 "tools":[{"type":"agent","targetId":"support-agent"},{"type":"agent","targetId":"ghost"},{"type":"builtin","name":"nope"}]}}]}}`), 0o644)
	out.Reset()
	code := run(context.Background(), []string{"validate", "--chains", repoChain(""), bad}, nil, &out, &errb)
	if code != exitFailure || !strings.Contains(out.String(), `warning: `+bad+`: metadata.nodes[0].configuration.tools[1].targetId: no chain "ghost"`) ||
		!strings.Contains(out.String(), `error: `+bad+`: metadata.nodes[0].configuration.tools[2].name: unknown builtin "nope"`) ||
		strings.Contains(out.String(), "support-agent\"") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	out.Reset()
	run(context.Background(), []string{"validate", "--json", bad}, nil, &out, &errb)
	var ps struct{ Errors, Warnings []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &ps); err != nil || len(ps.Errors) != 1 || len(ps.Warnings) != 2 || ps.Errors[0]["path"] == "" {
		t.Fatalf("%v %s", err, out.String())
	}

	// Warnings alone do not fail: RuleGo loads such a chain (its node
	// without an id is named node0).
	warn := filepath.Join(dir, "warn.json")
	_ = os.WriteFile(warn, []byte(`{"ruleChain":{"id":"warn"},"metadata":{"nodes":[{"type":"log","configuration":{"jsScript":"return 'x';"}}],"connections":[]}}`), 0o644)
	out.Reset()
	if code := run(context.Background(), []string{"validate", warn}, nil, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `warning: `+warn+`: metadata.nodes[0].id: missing: RuleGo names the node "node0"`) || !strings.Contains(out.String(), "ok: 1 chain file, 1 warning") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}
