package glob

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func newTool(t *testing.T, config string) (*Tool, string) {
	t.Helper()
	dir := t.TempDir()
	files := []string{
		".gitignore", ".git/HEAD", "app.log", "build/out.go", "go.mod", "main.go", "main_test.go",
		"docs/a.md", "docs/b.MD", "docs/.gitignore", "docs/draft.md",
		"src/x.ts", "src/y.tsx", "src/deep/er/z.ts", "src/deep/er/z_test.go",
		"secret/k.go", "web/node_modules/m/i.js", "web/app.js",
	}
	contents := map[string]string{".gitignore": "*.log\nbuild/\nnode_modules/\n", "docs/.gitignore": "draft.md\n"}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(contents[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		// Later files in the list are newer.
		mt := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("main.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if config == "" {
		config = `{"deny": ["secret"]}`
	}
	tool, err := New(tools.BuildContext{WorkDir: dir}, json.RawMessage(config))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tool.(*Tool).Close() })
	return tool.(*Tool), dir
}

func call(t *testing.T, tool tools.Tool, args string) (string, error) {
	t.Helper()
	res, err := tool.Call(context.Background(), json.RawMessage(args))
	return res.Text, err
}

func TestGlob(t *testing.T) {
	tool, _ := newTool(t, "")
	cases := []struct{ name, args, want string }{
		{"recursive", `{"pattern": "**/*.go"}`, "link.go\nmain.go\nmain_test.go\nsrc/deep/er/z_test.go\n"},
		{"top level only", `{"pattern": "*.go"}`, "link.go\nmain.go\nmain_test.go\n"},
		{"below a path", `{"pattern": "**/*.ts", "path": "src"}`, "src/deep/er/z.ts\nsrc/x.ts\n"},
		{"directory in pattern", `{"pattern": "src/*.ts"}`, "src/x.ts\n"},
		{"alternatives", `{"pattern": "src/*.{ts,tsx}"}`, "src/x.ts\nsrc/y.tsx\n"},
		{"alternative across directories", `{"pattern": "{docs/*.md,src/x.ts}"}`, "docs/a.md\nsrc/x.ts\n"},
		{"case sensitive", `{"pattern": "docs/*.md"}`, "docs/a.md\n"},
		{"leading ./", `{"pattern": "./docs/*"}`, "docs/.gitignore\ndocs/a.md\ndocs/b.MD\n"},
		{"ignored and denied left out", `{"pattern": "**/*.{js,log,go}", "path": "."}`,
			"link.go\nmain.go\nmain_test.go\nsrc/deep/er/z_test.go\nweb/app.js\n"},
		{"ignored directory asked for", `{"pattern": "*", "path": "build"}`, "build/out.go\n"},
		{"everything", `{"pattern": "**", "path": "src/deep"}`, "src/deep/er/z.ts\nsrc/deep/er/z_test.go\n"},
		// The symlink, made last, has its own, newest time.
		{"mtime newest first", `{"pattern": "**/*.go", "sort": "mtime"}`,
			"link.go\nsrc/deep/er/z_test.go\nmain_test.go\nmain.go\n"},
		{"mtime truncated", `{"pattern": "**/*.go", "sort": "mtime", "max_results": 3}`,
			"link.go\nsrc/deep/er/z_test.go\nmain_test.go\n[showing the 3 most recently modified of 4 matches. Narrow the pattern or path]\n"},
		{"path order truncated", `{"pattern": "**/*.go", "max_results": 3}`,
			"link.go\nmain.go\nmain_test.go\n[showing the first 3 matches; there are more. Narrow the pattern or path]\n"},
		{"no match with hint", `{"pattern": "*.ts"}`,
			"No files match \"*.ts\" in the workspace. A pattern without a slash matches only directly in the workspace; use \"**/*.ts\" to search subdirectories too.\n"},
		{"no match", `{"pattern": "**/*.rs", "path": "docs"}`, "No files match \"**/*.rs\" in directory docs.\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := call(t, tool, c.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestGlobCap(t *testing.T) {
	tool, _ := newTool(t, `{"maxResults": 2}`)
	got, err := call(t, tool, `{"pattern": "**", "max_results": 1000}`)
	if err != nil || !strings.Contains(got, "capped at 2 by configuration") || strings.Count(got, "\n") != 3 {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestGlobErrors(t *testing.T) {
	tool, dir := newTool(t, "")
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, args string
		kind       error
	}{
		{"missing pattern", `{}`, tools.ErrInvalidArgs},
		{"absolute pattern", `{"pattern": "/etc/*"}`, tools.ErrInvalidArgs},
		{"dotdot pattern", `{"pattern": "../*"}`, tools.ErrInvalidArgs},
		{"dotdot inside pattern", `{"pattern": "src/../../x"}`, tools.ErrInvalidArgs},
		{"invalid pattern", `{"pattern": "[a"}`, tools.ErrInvalidArgs},
		{"bad sort", `{"pattern": "*", "sort": "size"}`, tools.ErrInvalidArgs},
		{"negative max", `{"pattern": "*", "max_results": -2}`, tools.ErrInvalidArgs},
		{"file path", `{"pattern": "*", "path": "main.go"}`, tools.ErrInvalidArgs},
		{"escape", `{"pattern": "*", "path": ".."}`, tools.ErrInvalidPath},
		{"symlink out", `{"pattern": "*", "path": "out"}`, tools.ErrInvalidPath},
		{"denied", `{"pattern": "*", "path": "secret"}`, tools.ErrPolicyDenied},
		{"missing path", `{"pattern": "*", "path": "nope"}`, tools.ErrFileNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := call(t, tool, c.args); !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
		})
	}
}

func TestGlobConfig(t *testing.T) {
	for _, c := range []struct{ config, field string }{
		{`{"maxResults": 0}`, "maxResults"},
		{`{"maxResults": 1000000}`, "maxResults"},
		{`{"sort": "mtime"}`, "sort"},
		{`{"deny": ["/"]}`, "deny[0]"},
	} {
		_, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(c.config))
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != c.field {
			t.Errorf("%s: err = %v, want a config error at %s", c.config, err, c.field)
		}
	}
	if d, ok := tools.Builtins.Lookup(Name); !ok || !json.Valid(d.ConfigSchema) || !json.Valid(d.ArgsSchema) {
		t.Fatal("glob is not registered with valid schemas")
	}
}

func TestMayContain(t *testing.T) {
	cases := []struct {
		pattern, dir string
		want         bool
	}{
		{"src/*.go", "src", true},
		{"src/*.go", "src/sub", false},
		{"src/*.go", "lib", false},
		{"*.go", "src", false},
		{"**", "a/b/c", true},
		{"src/**/x.go", "src/a/b", true},
		{"src/**/x.go", "lib/a", false},
		{"*/tests/*.py", "pkg/tests", true},
		{"*/tests/*.py", "pkg/other", false},
		{"{src,lib}/*.go", "lib", true},
		{"{a/b,c}/*.go", "anything/at/all", true}, // alternatives across directories disable pruning
	}
	for _, c := range cases {
		g := &globber{segments: pruneSegments(c.pattern)}
		if got := g.mayContain(c.dir); got != c.want {
			t.Errorf("mayContain(%q, %q) = %v, want %v", c.pattern, c.dir, got, c.want)
		}
	}
}
