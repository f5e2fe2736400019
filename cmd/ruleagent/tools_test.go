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

func TestToolsList(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tools"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"builtin", "rulechain", "agent", "mcp", "bash", "read", "write", "edit", "grep", "glob", "skill"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("listing lacks %s:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"tools", "--json"}, nil, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var doc struct {
		Types    []map[string]any `json:"types"`
		Builtins []struct {
			Name         string          `json:"name"`
			ConfigSchema json.RawMessage `json:"configSchema"`
			ArgsSchema   json.RawMessage `json:"argsSchema"`
		} `json:"builtins"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || len(doc.Types) != 4 || len(doc.Builtins) < 7 {
		t.Fatalf("%v %s", err, out.String())
	}
	for _, b := range doc.Builtins {
		if !json.Valid(b.ConfigSchema) || !json.Valid(b.ArgsSchema) || len(b.ArgsSchema) < 10 {
			t.Fatalf("%s: schemas %s / %s", b.Name, b.ConfigSchema, b.ArgsSchema)
		}
	}
}

func TestToolsCallExitCodes(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"read", "--args", `{"path":"hello.txt"}`}, 0, "hello world"},
		{[]string{"bash", "--args", `{"command":"echo hi"}`}, 0, "hi"},
		{[]string{"bash", "--args", `{"command":"rm -rf /"}`}, exitRefused, "destructive"},
		{[]string{"read", "--args", `{"path":"../../etc/passwd"}`}, exitRefused, "escapes"},
		{[]string{"read", "--args", `{"path":"missing.txt"}`}, exitFailure, "does not exist"},
		{[]string{"bash", "--args", `{"command":"exit 3"}`}, exitFailure, "exit code: 3"},
		{[]string{"bash", "--config", `{"mode":"sometimes"}`, "--args", `{}`}, exitFailure, "mode"},
		{[]string{"nope", "--args", `{}`}, exitFailure, "unknown builtin"},
		{[]string{"read", "--args", `{"path":`}, exitFailure, "not valid JSON"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		args := append([]string{"tools", "call"}, c.args...)
		args = append(args, "--workspace", ws)
		code := run(context.Background(), args, nil, &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
			t.Errorf("%v: exit %d (want %d)\nstdout: %s\nstderr: %s", c.args, code, c.code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	run(context.Background(), []string{"tools", "call", "bash", "--args", `{"command":"echo hi"}`, "--workspace", ws, "--json"}, nil, &out, &errb)
	var res struct {
		Content string            `json:"content"`
		Events  []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Events) != 4 {
		t.Fatalf("%v: %s", err, out.String())
	}
}
