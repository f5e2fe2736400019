package grep

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newTool(t *testing.T, config string) (*Tool, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".gitignore":       "*.log\nbuild/\n",
		".git/config":      "hello git\n",
		"app.log":          "hello from a log\n",
		"build/out.txt":    "hello build\n",
		"big.txt":          strings.Repeat("x", 2000) + "\nhello big\n",
		"bin.dat":          "hello\x00binary\n",
		"crlf.txt":         "hello\r\nworld\r\n",
		"docs/.gitignore":  "draft.md\n",
		"docs/draft.md":    "hello draft\n",
		"docs/readme.md":   "Say hello.\nline 2\nline 3\nline 4\nhello again\nline 6\n",
		"main.go":          "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
		"secret/key.txt":   "hello secret\n",
		"util.go":          "package main\n\n// Hello says hello.\nfunc Hello() string { return \"Hello\" }\n",
		"vendor/lib/x.go":  "package lib // hello vendor\n",
		"vendor/lib/y.txt": "hello text\n",
	})
	if err := os.Symlink("main.go", filepath.Join(dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if config == "" {
		config = `{"deny": ["secret"], "maxFileSize": 1024}`
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

func TestGrep(t *testing.T) {
	tool, _ := newTool(t, "")
	skipped := "[8 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]\n"
	cases := []struct {
		name, args, want string
	}{
		{"content in walk order", `{"pattern": "hello"}`,
			"crlf.txt:1: hello\ndocs/readme.md:1: Say hello.\ndocs/readme.md:5: hello again\n" +
				"main.go:4: \tprintln(\"hello\")\nutil.go:3: // Hello says hello.\n" +
				"vendor/lib/x.go:1: package lib // hello vendor\nvendor/lib/y.txt:1: hello text\n" + skipped},
		{"regex", `{"pattern": "^func \\w+\\(\\)"}`, "main.go:3: func main() {\nutil.go:4: func Hello() string { return \"Hello\" }\n" + skipped},
		{"literal", `{"pattern": "Hello()", "literal": true}`, "util.go:4: func Hello() string { return \"Hello\" }\n" + skipped},
		{"ignore case", `{"pattern": "HELLO AGAIN", "ignore_case": true}`, "docs/readme.md:5: hello again\n" + skipped},
		{"dollar on crlf lines", `{"pattern": "hello$"}`, "crlf.txt:1: hello\n" + skipped},
		{"start of line anchor", `{"pattern": "\\Ahello"}`,
			"crlf.txt:1: hello\ndocs/readme.md:5: hello again\nvendor/lib/y.txt:1: hello text\n" + skipped},
		{"include name glob", `{"pattern": "hello", "include": "*.go"}`,
			"main.go:4: \tprintln(\"hello\")\nutil.go:3: // Hello says hello.\nvendor/lib/x.go:1: package lib // hello vendor\n[3 files searched]\n"},
		{"include brace glob", `{"pattern": "hello", "include": "*.{md,txt}", "exclude": "vendor"}`,
			"crlf.txt:1: hello\ndocs/readme.md:1: Say hello.\ndocs/readme.md:5: hello again\n" +
				"[2 files searched; 1 file over 1.0 KiB skipped]\n"},
		{"include path glob below path", `{"pattern": "hello", "path": "vendor", "include": "lib/*.go"}`,
			"vendor/lib/x.go:1: package lib // hello vendor\n[1 file searched]\n"},
		{"exclude directory glob", `{"pattern": "hello", "exclude": "{docs,vendor}/**"}`,
			"crlf.txt:1: hello\nmain.go:4: \tprintln(\"hello\")\nutil.go:3: // Hello says hello.\n" + "[4 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]\n"},
		{"files with matches", `{"pattern": "hello", "output_mode": "files_with_matches"}`,
			"crlf.txt\ndocs/readme.md\nmain.go\nutil.go\nvendor/lib/x.go\nvendor/lib/y.txt\n" + skipped},
		{"count", `{"pattern": "hello", "output_mode": "count", "path": "docs"}`, "docs/readme.md:2\n[2 files searched]\n"},
		{"context", `{"pattern": "hello", "path": "docs/readme.md", "context": 1}`,
			"docs/readme.md:1: Say hello.\ndocs/readme.md-2- line 2\n--\ndocs/readme.md-4- line 4\ndocs/readme.md:5: hello again\ndocs/readme.md-6- line 6\n"},
		{"context merges adjacent groups", `{"pattern": "hello", "path": "docs/readme.md", "context": 2}`,
			"docs/readme.md:1: Say hello.\ndocs/readme.md-2- line 2\ndocs/readme.md-3- line 3\ndocs/readme.md-4- line 4\ndocs/readme.md:5: hello again\ndocs/readme.md-6- line 6\n"},
		{"explicit ignored file", `{"pattern": "hello", "path": "app.log"}`, "app.log:1: hello from a log\n"},
		{"explicit ignored directory", `{"pattern": "hello", "path": "build"}`, "build/out.txt:1: hello build\n[1 file searched]\n"},
		{"no match", `{"pattern": "absent"}`, "No matches for \"absent\" in the workspace.\n" + skipped},
		{"truncated", `{"pattern": "hello", "max_results": 2}`,
			"crlf.txt:1: hello\ndocs/readme.md:1: Say hello.\n[results truncated: showing the first 2 matching lines; there are more. Narrow the pattern, path or include glob; 4 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]\n"},
		{"truncated files", `{"pattern": "hello", "output_mode": "files_with_matches", "max_results": 1}`,
			"crlf.txt\n[results truncated: showing the first 1 file; there are more. Narrow the pattern, path or include glob; 4 files searched; 1 binary file skipped; 1 file over 1.0 KiB skipped]\n"},
		{"limit reached exactly is not truncated", `{"pattern": "again", "max_results": 1}`, "docs/readme.md:5: hello again\n" + skipped},
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

func TestGrepCap(t *testing.T) {
	tool, _ := newTool(t, `{"maxResults": 1}`)
	got, err := call(t, tool, `{"pattern": "hello", "max_results": 50}`)
	if err != nil || !strings.Contains(got, "max_results is capped at 1 by configuration") {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestGrepErrors(t *testing.T) {
	tool, dir := newTool(t, "")
	cases := []struct {
		name, args string
		kind       error
	}{
		{"missing pattern", `{}`, tools.ErrInvalidArgs},
		{"bad regex", `{"pattern": "("}`, tools.ErrInvalidArgs},
		{"long pattern", `{"pattern": "` + strings.Repeat("a", maxPatternLen+1) + `"}`, tools.ErrInvalidArgs},
		{"bad mode", `{"pattern": "x", "output_mode": "lines"}`, tools.ErrInvalidArgs},
		{"context out of range", `{"pattern": "x", "context": 21}`, tools.ErrInvalidArgs},
		{"context in count mode", `{"pattern": "x", "context": 1, "output_mode": "count"}`, tools.ErrInvalidArgs},
		{"bad glob", `{"pattern": "x", "include": "[a"}`, tools.ErrInvalidArgs},
		{"negative max", `{"pattern": "x", "max_results": -1}`, tools.ErrInvalidArgs},
		{"unknown argument", `{"pattern": "x", "regex": true}`, tools.ErrInvalidArgs},
		{"escape", `{"pattern": "x", "path": "../"}`, tools.ErrInvalidPath},
		{"absolute outside", `{"pattern": "x", "path": "/etc"}`, tools.ErrInvalidPath},
		{"symlink out", `{"pattern": "x", "path": "out"}`, tools.ErrInvalidPath},
		{"denied", `{"pattern": "x", "path": "secret/key.txt"}`, tools.ErrPolicyDenied},
		{"missing", `{"pattern": "x", "path": "nope"}`, tools.ErrFileNotFound},
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, tool, c.args)
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
		})
	}
}

func TestGrepConfig(t *testing.T) {
	cases := []struct{ config, field string }{
		{`{"maxResults": 0}`, "maxResults"},
		{`{"maxFileSize": -1}`, "maxFileSize"},
		{`{"maxResult": 5}`, "maxResult"},
		{`{"deny": ["../x"]}`, "deny[0]"},
		{`{"maxResults": "10"}`, "maxResults"},
	}
	for _, c := range cases {
		_, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(c.config))
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != c.field {
			t.Errorf("%s: err = %v, want a config error at %s", c.config, err, c.field)
		}
	}
	if d, ok := tools.Builtins.Lookup(Name); !ok || !json.Valid(d.ConfigSchema) || !json.Valid(d.ArgsSchema) {
		t.Fatal("grep is not registered with valid schemas")
	}
}

func TestGrepCancelled(t *testing.T) {
	tool, _ := newTool(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Call(ctx, json.RawMessage(`{"pattern": "hello"}`)); err == nil {
		t.Fatal("a cancelled search succeeded")
	}
}

// TestGrepDoesNotBlockOnFifos: a FIFO (as a file or as a .gitignore) must
// be passed over, not opened for a read that would wait for a writer.
func TestGrepDoesNotBlockOnFifos(t *testing.T) {
	tool, dir := newTool(t, "")
	for _, p := range []string{"pipe.txt", "docs/sub/.gitignore"} {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(full, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := call(t, tool, `{"pattern": "again"}`)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("grep blocked on a FIFO")
	}
	if _, err := call(t, tool, `{"pattern": "x", "path": "pipe.txt"}`); !errors.Is(err, tools.ErrInvalidArgs) {
		t.Fatalf("naming a FIFO: %v", err)
	}
}
