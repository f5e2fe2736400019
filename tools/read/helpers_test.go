package read

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// fixture is a workspace with a sibling "outside" directory.
type fixture struct {
	ws, outside string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	mkdir(t, f.ws)
	mkdir(t, f.outside)
	return f
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// file writes content at the workspace-relative path rel.
func (f fixture) file(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(f.ws, rel)
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tool makes a read tool on the fixture with the given extra config.
func (f fixture) tool(t *testing.T, config string) *Tool {
	t.Helper()
	cfg := map[string]any{}
	if config != "" {
		if err := json.Unmarshal([]byte(config), &cfg); err != nil {
			t.Fatal(err)
		}
	}
	cfg["workDir"] = f.ws
	raw, _ := json.Marshal(cfg)
	tl, err := New(tools.BuildContext{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.(*Tool).Close() })
	return tl.(*Tool)
}

// call is one table row's expectation: the error kind, or substrings of
// the result that must (want) and must not (not) appear.
type call struct {
	name string
	args string
	kind error
	want []string
	not  []string
}

func (c call) run(t *testing.T, tl tools.Tool) {
	t.Helper()
	res, err := tl.Call(context.Background(), json.RawMessage(c.args))
	if c.kind != nil {
		if !errors.Is(err, c.kind) {
			t.Fatalf("%s: err = %v (result %q), want %v", c.args, err, res.Text, c.kind)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: error %q lacks %q", c.args, err, w)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", c.args, err)
	}
	for _, w := range c.want {
		if !strings.Contains(res.Text, w) {
			t.Fatalf("%s: result lacks %q:\n%s", c.args, w, res.Text)
		}
	}
	for _, n := range c.not {
		if strings.Contains(res.Text, n) {
			t.Fatalf("%s: result must not contain %q:\n%s", c.args, n, res.Text)
		}
	}
}

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o644) }
