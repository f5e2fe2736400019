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

func TestRegistered(t *testing.T) {
	d, ok := tools.Builtins.Lookup(Name)
	if !ok {
		t.Fatal("read is not registered")
	}
	var schema struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(d.ConfigSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for field, def := range map[string]string{"maxReadLines": "1000", "maxSearchResults": "30", "maxFileSize": "10485760"} {
		if got := string(schema.Properties[field].Default); got != def {
			t.Errorf("config %s default = %s, want %s", field, got, def)
		}
	}
	for _, field := range []string{"workDir", "deny", "maxListEntries"} {
		if _, ok := schema.Properties[field]; !ok {
			t.Errorf("config schema lacks %s", field)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		config string
		path   string
	}{
		{`{"maxReadLines":0}`, "maxReadLines"},
		{`{"maxSearchResults":-1}`, "maxSearchResults"},
		{`{"maxFileSize":0}`, "maxFileSize"},
		{`{"maxListEntries":0}`, "maxListEntries"},
		{`{"maxReadLines":"many"}`, "maxReadLines"},
		{`{"maxLines":10}`, "maxLines"},
		{`{"deny":["ok","../etc"]}`, "deny[1]"},
	}
	for _, c := range cases {
		t.Run(c.config, func(t *testing.T) {
			var m map[string]any
			_ = json.Unmarshal([]byte(c.config), &m)
			m["workDir"] = dir
			raw, _ := json.Marshal(m)
			_, err := New(tools.BuildContext{}, raw)
			var ce *tools.ConfigError
			if !errors.As(err, &ce) || ce.Path != c.path {
				t.Fatalf("err = %v, want a ConfigError at %s", err, c.path)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	f := newFixture(t)
	f.file(t, "notes.txt", "alpha\nbeta\ngamma\n")
	f.file(t, "long.txt", numbered(25))
	f.file(t, "crlf.txt", "one\r\ntwo\r\n")
	f.file(t, "empty.txt", "")
	f.file(t, "img.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	f.file(t, "wide.txt", strings.Repeat("x", 5000)+"\nshort\n")
	f.file(t, "sub/inner.txt", "inner\n")
	tl := f.tool(t, `{"maxReadLines":10}`)
	for _, c := range []call{
		{name: "whole", args: `{"path":"notes.txt"}`, want: []string{"notes.txt (3 lines, 17 bytes)", "1\talpha\n2\tbeta\n3\tgamma\n"}},
		{name: "explicit op", args: `{"operation":"file","path":"notes.txt","line_from":2,"line_to":2}`, want: []string{"notes.txt: lines 2-2 of 3", "2\tbeta"}, not: []string{"alpha", "gamma"}},
		{name: "line_to past the end is clamped", args: `{"path":"notes.txt","line_from":2,"line_to":99}`, want: []string{"lines 2-3 of 3", "3\tgamma"}},
		{name: "only line_to", args: `{"path":"notes.txt","line_to":1}`, want: []string{"lines 1-1 of 3", "1\talpha"}, not: []string{"beta"}},
		{name: "maxReadLines caps and says where to go on", args: `{"path":"long.txt"}`, want: []string{"lines 1-10 of 25", "continue with line_from=11", "10\tline 10"}, not: []string{"line 11"}},
		{name: "range over the cap", args: `{"path":"long.txt","line_from":12,"line_to":25}`, want: []string{"lines 12-21 of 25", "continue with line_from=22"}},
		{name: "crlf shown without CR", args: `{"path":"crlf.txt"}`, want: []string{"1\tone\n2\ttwo\n"}, not: []string{"\r"}},
		{name: "empty", args: `{"path":"empty.txt"}`, want: []string{"empty.txt is empty"}},
		{name: "long line cut", args: `{"path":"wide.txt"}`, want: []string{"[line cut, 5001 bytes in all]", "2\tshort"}},
		{name: "nested", args: `{"path":"sub/inner.txt"}`, want: []string{"1\tinner"}},
		{name: "binary refused", args: `{"path":"img.png"}`, kind: tools.ErrInvalidArgs, want: []string{"binary"}},
		{name: "missing", args: `{"path":"nope.txt"}`, kind: tools.ErrFileNotFound},
		{name: "line_from past the end", args: `{"path":"notes.txt","line_from":4}`, kind: tools.ErrInvalidArgs, want: []string{"past the end", "has 3 lines"}},
		{name: "from after to", args: `{"path":"notes.txt","line_from":3,"line_to":2}`, kind: tools.ErrInvalidArgs},
		{name: "negative", args: `{"path":"notes.txt","line_from":-1}`, kind: tools.ErrInvalidArgs},
		{name: "directory with op file", args: `{"operation":"file","path":"sub"}`, kind: tools.ErrInvalidArgs, want: []string{"directory"}},
		{name: "no path", args: `{"operation":"file"}`, kind: tools.ErrInvalidArgs},
		{name: "unknown argument", args: `{"path":"notes.txt","lines":"1-2"}`, kind: tools.ErrInvalidArgs, want: []string{`"lines"`, "line_from"}},
		{name: "unknown operation", args: `{"operation":"cat","path":"notes.txt"}`, kind: tools.ErrInvalidArgs},
		{name: "escape", args: `{"path":"../outside/x"}`, kind: tools.ErrInvalidPath},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, tl) })
	}
}

func TestReadLargeFile(t *testing.T) {
	f := newFixture(t)
	content := numbered(3000)
	f.file(t, "big.log", content)
	tl := f.tool(t, `{"maxFileSize":1000,"maxReadLines":5}`)
	for _, c := range []call{
		{name: "whole refused", args: `{"path":"big.log"}`, kind: tools.ErrInvalidArgs, want: []string{"line_from"}},
		{name: "range streamed", args: `{"path":"big.log","line_from":2000,"line_to":2002}`, want: []string{"lines 2000-2002", "too large to count", "2000\tline 2000", "2002\tline 2002"}, not: []string{"line 2003"}},
		{name: "range capped", args: `{"path":"big.log","line_from":10}`, want: []string{"lines 10-14", "continue with line_from=15"}},
		{name: "range past the end", args: `{"path":"big.log","line_from":3001}`, kind: tools.ErrInvalidArgs, want: []string{"has 3000 lines"}},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, tl) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tl.Call(ctx, json.RawMessage(`{"path":"big.log","line_from":2990}`)); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled read went on: %v", err)
	}
}

func TestInferOperation(t *testing.T) {
	f := newFixture(t)
	f.file(t, "a.txt", "needle here\n")
	f.file(t, "dir/b.txt", "b\n")
	tl := f.tool(t, "")
	for _, c := range []call{
		{name: "query means search", args: `{"query":"needle"}`, want: []string{"a.txt:1: needle here"}},
		{name: "directory means list", args: `{"path":"dir"}`, want: []string{"b.txt (2 bytes)"}},
		{name: "nothing means list the workspace", args: `{}`, want: []string{"a.txt", "dir/"}},
		{name: "file means file", args: `{"path":"a.txt"}`, want: []string{"1\tneedle here"}},
		{name: "missing path", args: `{"path":"zzz"}`, kind: tools.ErrFileNotFound},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, tl) })
	}
}

func TestReadRefusesFIFO(t *testing.T) {
	f := newFixture(t)
	if err := mkfifo(filepath.Join(f.ws, "pipe")); err != nil {
		t.Skip("mkfifo:", err)
	}
	tl := f.tool(t, "")
	// Opening a FIFO would block until a writer came; the call must
	// return at once with an error instead.
	call{args: `{"operation":"file","path":"pipe"}`, kind: tools.ErrInvalidArgs, want: []string{"not a regular file"}}.run(t, tl)
	call{args: `{"operation":"search","path":"pipe","query":"x"}`, kind: tools.ErrInvalidArgs}.run(t, tl)
	if _, err := os.Stat(filepath.Join(f.ws, "pipe")); err != nil {
		t.Fatal(err)
	}
}
