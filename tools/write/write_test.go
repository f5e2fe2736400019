package write

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

var fixedTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

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
	w := tl.(*Tool)
	w.now = func() time.Time { return fixedTime }
	t.Cleanup(func() { w.Close() })
	return w
}

func put(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
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

func TestWrite(t *testing.T) {
	const sep = "--- appended 2026-05-01T12:00:00Z ---"
	cases := []struct {
		name    string
		config  string
		files   map[string]string // existing files
		args    string
		kind    error
		result  string            // substring of the result or error
		content map[string]string // files afterwards
	}{
		{name: "create", args: `{"path":"notes.txt","content":"hello world\n"}`,
			result: "created notes.txt (12 bytes)", content: map[string]string{"notes.txt": "hello world\n"}},
		{name: "create is the default and makes parents", args: `{"path":"a/b/c.txt","content":"x","mode":"create"}`,
			result: "created a/b/c.txt", content: map[string]string{"a/b/c.txt": "x"}},
		{name: "create empty file", args: `{"path":"empty","content":""}`,
			result: "created empty (0 bytes)", content: map[string]string{"empty": ""}},
		{name: "create over an existing file", files: map[string]string{"n.txt": "old"}, args: `{"path":"n.txt","content":"new"}`,
			kind: tools.ErrInvalidArgs, result: "already exists", content: map[string]string{"n.txt": "old"}},
		{name: "overwrite", files: map[string]string{"n.txt": "old content"}, args: `{"path":"n.txt","content":"new","mode":"overwrite"}`,
			result: "overwrote n.txt (3 bytes; it was 11 bytes)", content: map[string]string{"n.txt": "new"}},
		{name: "overwrite with empty", files: map[string]string{"n.txt": "old"}, args: `{"path":"n.txt","content":"","mode":"overwrite"}`,
			content: map[string]string{"n.txt": ""}},
		{name: "overwrite creates", args: `{"path":"n.txt","content":"new","mode":"overwrite"}`,
			result: "created n.txt", content: map[string]string{"n.txt": "new"}},
		{name: "append with separator", files: map[string]string{"log.md": "first\n"}, args: `{"path":"log.md","content":"second\n","mode":"append"}`,
			result: "appended 7 bytes to log.md", content: map[string]string{"log.md": "first\n" + sep + "\nsecond\n"}},
		{name: "append separator after an unterminated last line", files: map[string]string{"log.md": "first"}, args: `{"path":"log.md","content":"second","mode":"append"}`,
			content: map[string]string{"log.md": "first\n" + sep + "\nsecond"}},
		{name: "append separator in a CRLF file", files: map[string]string{"log.md": "a\r\nb\r\n"}, args: `{"path":"log.md","content":"c\r\n","mode":"append"}`,
			content: map[string]string{"log.md": "a\r\nb\r\n" + sep + "\r\nc\r\n"}},
		{name: "append without separator is exact", config: `{"appendSeparator":false}`, files: map[string]string{"d.jsonl": "{\"a\":1}\n"},
			args: `{"path":"d.jsonl","content":"{\"a\":2}\n","mode":"append"}`, content: map[string]string{"d.jsonl": "{\"a\":1}\n{\"a\":2}\n"}},
		{name: "append creates", config: `{"appendSeparator":false}`, args: `{"path":"new.csv","content":"a,b\n","mode":"append"}`,
			result: "created new.csv", content: map[string]string{"new.csv": "a,b\n"}},
		{name: "empty append refused", files: map[string]string{"log.md": "x"}, args: `{"path":"log.md","content":"","mode":"append"}`,
			kind: tools.ErrInvalidArgs, result: "nothing to append", content: map[string]string{"log.md": "x"}},
		{name: "too large", config: `{"maxFileSize":5}`, args: `{"path":"big","content":"123456"}`, kind: tools.ErrInvalidArgs, result: "over the 5 bytes limit"},
		{name: "append makes it too large", config: `{"maxFileSize":8,"appendSeparator":false}`, files: map[string]string{"f": "12345"},
			args: `{"path":"f","content":"6789","mode":"append"}`, kind: tools.ErrInvalidArgs, content: map[string]string{"f": "12345"}},
		{name: "overwrite too large keeps the old", config: `{"maxFileSize":5}`, files: map[string]string{"f": "old"},
			args: `{"path":"f","content":"123456","mode":"overwrite"}`, kind: tools.ErrInvalidArgs, content: map[string]string{"f": "old"}},
		{name: "missing content", args: `{"path":"x"}`, kind: tools.ErrInvalidArgs, result: "content is required"},
		{name: "null content", args: `{"path":"x","content":null}`, kind: tools.ErrInvalidArgs},
		{name: "missing path", args: `{"content":"x"}`, kind: tools.ErrInvalidArgs},
		{name: "bad mode", args: `{"path":"x","content":"x","mode":"replace"}`, kind: tools.ErrInvalidArgs, result: "create, overwrite or append"},
		{name: "unknown argument", args: `{"path":"x","content":"x","overwrite":true}`, kind: tools.ErrInvalidArgs, result: `"overwrite"`},
		{name: "trailing slash", args: `{"path":"dir/","content":"x"}`, kind: tools.ErrInvalidPath},
		{name: "workspace itself", args: `{"path":".","content":"x","mode":"overwrite"}`, kind: tools.ErrInvalidPath},
		{name: "a directory", files: map[string]string{"d/f": "x"}, args: `{"path":"d","content":"x","mode":"overwrite"}`, kind: tools.ErrInvalidArgs},
		{name: "escape", args: `{"path":"../x","content":"x"}`, kind: tools.ErrInvalidPath},
		{name: "denied", config: `{"deny":["private"]}`, args: `{"path":"private/x","content":"x"}`, kind: tools.ErrPolicyDenied},
		{name: "backup directory is denied", args: `{"path":".ruleagent/backups/s/x.v1","content":"forged"}`, kind: tools.ErrPolicyDenied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, content := range c.files {
				put(t, filepath.Join(dir, p), content, 0o644)
			}
			tl := newTool(t, dir, c.config)
			res, err := tl.Call(context.Background(), json.RawMessage(c.args))
			got := res.Text
			if c.kind != nil {
				if !errors.Is(err, c.kind) {
					t.Fatalf("err = %v, want %v", err, c.kind)
				}
				got = err.Error()
			} else if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, c.result) {
				t.Fatalf("%q lacks %q", got, c.result)
			}
			for p, want := range c.content {
				if b := get(t, filepath.Join(dir, p)); b != want {
					t.Fatalf("%s = %q, want %q", p, b, want)
				}
			}
			assertNoTempFiles(t, dir)
		})
	}
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

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	for config, field := range map[string]string{
		`{"maxFileSize":0}`:            "maxFileSize",
		`{"appendSeparator":"yes"}`:    "appendSeparator",
		`{"separator":false}`:          "separator",
		`{"deny":["a","b","x/../.."]}`: "deny[2]",
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(config), &m)
		m["workDir"] = dir
		raw, _ := json.Marshal(m)
		_, err := New(tools.BuildContext{}, raw)
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != field {
			t.Errorf("%s: err = %v, want a ConfigError at %s", config, err, field)
		}
	}
	on := newTool(t, dir, "").Info().Description
	off := newTool(t, dir, `{"appendSeparator":false}`).Info().Description
	if !strings.Contains(on, "timestamp separator") || !strings.Contains(off, "exactly as given") {
		t.Errorf("the description must tell the model what append does:\n%s\n%s", on, off)
	}
	d, ok := tools.Builtins.Lookup(Name)
	if !ok || !strings.Contains(string(d.ConfigSchema), `"appendSeparator":{"type":"boolean","description":"Whether mode append puts a timestamp separator`) ||
		!strings.Contains(string(d.ConfigSchema), `"default":true`) {
		t.Errorf("config schema: %s", d.ConfigSchema)
	}
}

func TestModeKept(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\n", 0o750)
	put(t, filepath.Join(dir, "private.txt"), "a\n", 0o600)
	tl := newTool(t, dir, "")
	for _, args := range []string{
		`{"path":"script.sh","content":"#!/bin/sh\necho hi\n","mode":"overwrite"}`,
		`{"path":"private.txt","content":"b\n","mode":"append"}`,
		`{"path":"fresh.txt","content":"new"}`,
	} {
		if _, err := tl.Call(context.Background(), json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]os.FileMode{"script.sh": 0o750, "private.txt": 0o600, "fresh.txt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}

// TestFailedWriteKeepsOldContent makes the directory immutable, so the
// atomic write cannot create its temporary file, and checks the old content
// survives and no temporary file is left.
func TestFailedWriteKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "sub", "f.txt"), "old\n", 0o644)
	tl := newTool(t, dir, "")
	undo := makeImmutable(t, filepath.Join(dir, "sub"))
	_, err := tl.Call(context.Background(), json.RawMessage(`{"path":"sub/f.txt","content":"new\n","mode":"overwrite"}`))
	_, err2 := tl.Call(context.Background(), json.RawMessage(`{"path":"sub/f.txt","content":"more\n","mode":"append"}`))
	undo()
	if err == nil || err2 == nil {
		t.Fatalf("writes into an immutable directory succeeded: %v, %v", err, err2)
	}
	if got := get(t, filepath.Join(dir, "sub", "f.txt")); got != "old\n" {
		t.Fatalf("content after failed writes = %q", got)
	}
	assertNoTempFiles(t, dir)
}

// TestConcurrentAppends checks that appends through one tool are
// serialised: none is lost.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	tl := newTool(t, dir, `{"appendSeparator":false}`)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tl.Call(context.Background(), json.RawMessage(`{"path":"log","content":"x\n","mode":"append"}`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := get(t, filepath.Join(dir, "log")); got != strings.Repeat("x\n", 20) {
		t.Fatalf("lost appends: %q", got)
	}
	if tl.locks.Held() != 0 {
		t.Fatal("path locks not released")
	}
}
