package read

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

func searchFixture(t *testing.T) (fixture, *Tool) {
	f := newFixture(t)
	f.file(t, "main.go", "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n")
	f.file(t, "src/app/app.go", "package app\n// hello from app\n")
	f.file(t, "src/app/app_test.go", "package app\n// hello from a test\n")
	f.file(t, "src/readme.md", "Hello docs\r\n")
	f.file(t, "bin/tool", "hello\x00\x01\x02binary")
	f.file(t, "secret/keys.txt", "hello secret\n")
	f.file(t, ".git/config", "hello git\n")
	f.file(t, "many.txt", strings.Repeat("hit\n", 50))
	if err := os.WriteFile(filepath.Join(f.outside, "x.txt"), []byte("hello outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.outside, "x.txt"), filepath.Join(f.ws, "link-out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "dir-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(f.outside, "x.txt"), filepath.Join(f.ws, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	return f, f.tool(t, `{"deny":["secret"],"maxSearchResults":5}`)
}

func TestSearch(t *testing.T) {
	_, tl := searchFixture(t)
	for _, c := range []call{
		{name: "literal is case-sensitive", args: `{"query":"hello"}`,
			want: []string{"src/app/app.go:2: // hello from app", "src/app/app_test.go:2: // hello from a test"},
			not:  []string{"main.go", "readme", "secret", "outside", "git", "bin/tool"}},
		{name: "ignore_case", args: `{"query":"HELLO","ignore_case":true}`, want: []string{`main.go:4: println("Hello")`, "src/readme.md:1: Hello docs"}, not: []string{"\r"}},
		{name: "regex", args: `{"query":"^func \\w+\\(","use_regex":true}`, want: []string{"main.go:3: func main() {", "1 match"}},
		{name: "pattern on names", args: `{"query":"hello","pattern":"*_test.go"}`, want: []string{"app_test.go:2"}, not: []string{"app.go:2"}},
		{name: "pattern with **", args: `{"query":"package","pattern":"src/**/app.go"}`, want: []string{"src/app/app.go:1"}, not: []string{"main.go", "app_test.go"}},
		{name: "pattern relative to path", args: `{"query":"package","path":"src","pattern":"app/*.go"}`, want: []string{"src/app/app.go:1", "src/app/app_test.go:1"}},
		{name: "within a directory", args: `{"query":"hello","path":"src/app"}`, want: []string{"2 matches", "in src/app/"}},
		{name: "within one file", args: `{"query":"hello","path":"src/app/app.go"}`, want: []string{"1 match", "app.go:2"}},
		{name: "binary skipped and said so", args: `{"query":"hello","ignore_case":true}`, want: []string{"1 binary file skipped"}, not: []string{"bin/tool"}},
		{name: "result cap", args: `{"query":"hit","path":"many.txt"}`, want: []string{"first 5 matches", "more exist", "many.txt:5: hit"}, not: []string{"many.txt:6"}},
		{name: "no match", args: `{"query":"zebra"}`, want: []string{`no matches for "zebra"`, "files searched"}},
		{name: "regex too long", args: `{"query":"` + strings.Repeat("a", 1001) + `","use_regex":true}`, kind: tools.ErrInvalidArgs, want: []string{"limit is 1000"}},
		{name: "bad regex", args: `{"query":"(unclosed","use_regex":true}`, kind: tools.ErrInvalidArgs, want: []string{"RE2"}},
		{name: "bad glob", args: `{"query":"x","pattern":"[a"}`, kind: tools.ErrInvalidArgs},
		{name: "missing query", args: `{"operation":"search"}`, kind: tools.ErrInvalidArgs},
		{name: "denied path", args: `{"query":"hello","path":"secret"}`, kind: tools.ErrPolicyDenied},
		{name: "outside path", args: `{"query":"hello","path":"dir-out"}`, kind: tools.ErrInvalidPath},
		{name: "missing path", args: `{"query":"hello","path":"nope"}`, kind: tools.ErrFileNotFound},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, tl) })
	}
}

func TestSearchStopsWhenCancelled(t *testing.T) {
	_, tl := searchFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tl.Call(ctx, json.RawMessage(`{"query":"hello"}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the cancellation", err)
	}
}

func TestList(t *testing.T) {
	f, _ := searchFixture(t)
	f.file(t, "src/app/deep/deeper/file.txt", "x")
	tl := f.tool(t, `{"deny":["secret"],"maxListEntries":4}`)
	all := f.tool(t, `{"deny":["secret"]}`)
	for _, c := range []struct {
		call
		tool *Tool
	}{
		{call{name: "workspace", args: `{"operation":"list"}`,
			want: []string{"main.go (", "src/\n", "bin/\n", ".git/\n", "link-out.txt@", "dir-out@"},
			not:  []string{"secret", "app.go"}}, all},
		{call{name: "sub-directory", args: `{"path":"src"}`, want: []string{"src/ (1 directory, 1 file)", "app/\n", "readme.md (12 bytes)"}}, all},
		{call{name: "recursive", args: `{"path":"src","recursive":true}`,
			want: []string{"app/app.go (", "app/deep/\n", "app/deep/deeper/\n", "down to depth 3"},
			not:  []string{"file.txt"}}, all},
		{call{name: "max_depth implies recursive", args: `{"path":"src","max_depth":4}`, want: []string{"app/deep/deeper/file.txt (1 byte)"}}, all},
		{call{name: "recursive from the top skips denied and .git", args: `{"recursive":true,"max_depth":5}`,
			want: []string{".git/\n", "src/app/app.go"}, not: []string{"secret", ".git/config", "outside/x.txt"}}, all},
		{call{name: "entry cap", args: `{"recursive":true}`, want: []string{"first 4 entries", "more exist"}}, tl},
		{call{name: "file", args: `{"operation":"list","path":"main.go"}`, kind: tools.ErrInvalidArgs, want: []string{"operation file"}}, all},
		{call{name: "denied", args: `{"operation":"list","path":"secret"}`, kind: tools.ErrPolicyDenied}, all},
		{call{name: "depth too deep", args: `{"path":"src","max_depth":21}`, kind: tools.ErrInvalidArgs}, all},
		{call{name: "outside through symlink", args: `{"operation":"list","path":"dir-out"}`, kind: tools.ErrInvalidPath}, all},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, c.tool) })
	}
}

func TestListEmpty(t *testing.T) {
	f := newFixture(t)
	mkdir(t, filepath.Join(f.ws, "empty"))
	call{args: `{"path":"empty"}`, want: []string{"empty/ is empty"}}.run(t, f.tool(t, ""))
}
