package edit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func newTool(t *testing.T, dir, config string) *Tool {
	t.Helper()
	cfg := map[string]any{}
	if config != "" {
		if err := json.Unmarshal([]byte(config), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	cfg["workDir"] = dir
	raw, _ := json.Marshal(cfg)
	tl, err := New(tools.BuildContext{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.(*Tool).Close() })
	return tl.(*Tool)
}

// in returns a context whose call belongs to the thread id session.
func in(session string) context.Context {
	return tools.WithCall(context.Background(), &tools.CallInfo{ThreadID: session, RunID: "run-1"})
}

func put(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// do calls the tool and checks the outcome: with kind set, an error of that
// kind whose message holds want; otherwise a result holding want.
func do(t *testing.T, tl *Tool, ctx context.Context, args string, kind error, want ...string) string {
	t.Helper()
	res, err := tl.Call(ctx, json.RawMessage(args))
	got := res.Text
	if kind != nil {
		if !errors.Is(err, kind) {
			t.Fatalf("%s: err = %v (result %q), want %v", args, err, res.Text, kind)
		}
		got = err.Error()
	} else if err != nil {
		t.Fatalf("%s: %v", args, err)
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%s: %q lacks %q", args, got, w)
		}
	}
	return got
}

// assertNoTempFiles fails if an atomic write left its temporary file.
func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}
