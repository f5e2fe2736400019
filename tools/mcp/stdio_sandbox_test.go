package mcptool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// TestStdioServerConfined runs the real filesystem server (npm
// @modelcontextprotocol/server-filesystem) with two allowed directories,
// the workspace and an "outside" one holding a secret: unconfined it
// reads the secret; confined by the sandbox it can still serve the
// workspace, but the kernel keeps it from reading or writing outside.
func TestStdioServerConfined(t *testing.T) {
	p := needPeers(t)
	if st := sandbox.Describe(); !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the sandbox tests, but: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine processes here: %s", st.Reason)
	}
	mustReal := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	ws, outside := mustReal(t.TempDir()), mustReal(t.TempDir())
	const secret = "TOPSECRET-MCP-OUTSIDE"
	for _, f := range []struct{ path, text string }{{filepath.Join(ws, "notes.txt"), "inside\n"}, {filepath.Join(outside, "secret.txt"), secret + "\n"}} {
		if err := os.WriteFile(f.path, []byte(f.text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	modules := filepath.Dir(p.bin)
	entry := func(sb string) string {
		return `[{"type":"mcp","name":"fs","config":{
		"command":` + jsonString(filepath.Join(p.bin, "mcp-server-filesystem")) + `,
		"args":[` + jsonString(ws) + `,` + jsonString(outside) + `],"cwd":` + jsonString(ws) + sb + `,
		"tools":["read_text_file","write_file"]}}]`
	}
	read := `{"path":` + jsonString(filepath.Join(outside, "secret.txt")) + `}`
	// Unconfined, the server's own policy lets it read both: the secret
	// shows, so the confined case below can fail.
	plain := mustBuild(t, Options{}, entry(""))
	if o := invoke(plain, "fs__read_text_file", read); !strings.Contains(o.Content, secret) {
		t.Fatalf("unconfined, the server should read the outside file: %+v", o)
	}
	confined := mustBuild(t, Options{}, entry(`,"sandbox":{"mode":"required","read":[`+jsonString(modules)+`]}`))
	if o := mustInvoke(t, confined, "fs__read_text_file", `{"path":`+jsonString(filepath.Join(ws, "notes.txt"))+`}`); o.Content != "inside\n" {
		t.Fatalf("confined, the workspace file: %q", o.Content)
	}
	if o := invoke(confined, "fs__read_text_file", read); !o.IsError || strings.Contains(o.Content, secret) {
		t.Fatalf("confined, the server read outside its workspace: %+v", o)
	}
	created := filepath.Join(outside, "pwned.txt")
	if o := invoke(confined, "fs__write_file", `{"path":`+jsonString(created)+`,"content":"x"}`); !o.IsError {
		t.Fatalf("confined, the server wrote outside its workspace: %+v", o)
	}
	if _, err := os.Stat(created); err == nil {
		t.Fatal("the confined server created a file outside its workspace")
	}
}

func TestStdioSandboxConfig(t *testing.T) {
	for _, c := range []struct{ config, path string }{
		{`{"server":"http://127.0.0.1:1/mcp","sandbox":{}}`, "sandbox"},
		{`{"command":"x","sandbox":{"mode":"off"}}`, "sandbox.mode"},
		{`{"command":"x","sandbox":{"mode":"always"}}`, "sandbox.mode"},
		{`{"command":"x","sandbox":{"network":"wifi"}}`, "sandbox.network"},
		{`{"command":"x","sandbox":{"connect":["nohost"]}}`, "sandbox.network"},
		{`{"command":"x","sandbox":{"read":["relative/dir"]}}`, "sandbox"},
	} {
		_, err := parseConfig([]byte(c.config), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: want an error naming %s, got %v", c.config, c.path, err)
		}
	}
	tg, err := parseConfig([]byte(`{"command":"x","sandbox":{"read":["/opt/x"],"connect":["db:5432"]}}`), t.TempDir())
	if err != nil || tg.sandbox == nil || tg.sandbox.mode != sandbox.BestEffort || len(tg.sandbox.ports) != 1 {
		t.Fatalf("a good sandbox config: %+v %v", tg, err)
	}
	if tg, err := parseConfig([]byte(`{"command":"x"}`), t.TempDir()); err != nil || tg.sandbox != nil {
		t.Fatalf("without sandbox the server is not confined: %+v %v", tg, err)
	}
}

// TestStdioServerKeepsServerPaths runs the real filesystem server with
// the host's chains folder and data directory inside its workspace:
// confined, the kernel keeps it from writing either or reading the data
// directory, while the rest of the workspace stays its own.
func TestStdioServerKeepsServerPaths(t *testing.T) {
	p := needPeers(t)
	if st := sandbox.Describe(); !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the sandbox tests, but: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine processes here: %s", st.Reason)
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const secret = "SESSIONS-DB-MCP-SECRET"
	for _, d := range []string{"chains", "data", "src"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, text := range map[string]string{"notes.txt": "inside\n", "data/sessions.db": secret, "chains/a.json": "{}"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	specs, err := tools.ParseSpecs(json.RawMessage(`[{"type":"mcp","name":"fs","config":{
		"command":` + jsonString(filepath.Join(p.bin, "mcp-server-filesystem")) + `,"args":[` + jsonString(ws) + `],"cwd":` + jsonString(ws) + `,
		"sandbox":{"mode":"required","read":[` + jsonString(filepath.Dir(p.bin)) + `]},"tools":["read_text_file","write_file"]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := tools.Build(context.Background(), specs, tools.BuildEnv{Providers: map[string]tools.Provider{tools.TypeMCP: NewProvider(Options{})},
		WorkDir: ws, ServerPaths: []tools.ServerPath{{Path: filepath.Join(ws, "chains"), What: "the server's chains folder"},
			{Path: filepath.Join(ws, "data"), What: "the server's data directory", Secret: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	for _, f := range []string{"chains/evil.json", "chains/a.json", "data/evil"} {
		path := filepath.Join(ws, f)
		if o := invoke(set, "fs__write_file", `{"path":`+jsonString(path)+`,"content":"x"}`); !o.IsError {
			t.Errorf("the confined server wrote %s: %+v", f, o)
		}
	}
	if o := invoke(set, "fs__read_text_file", `{"path":`+jsonString(filepath.Join(ws, "data", "sessions.db"))+`}`); !o.IsError || strings.Contains(o.Content, secret) {
		t.Errorf("the confined server read the data directory: %+v", o)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "chains", "a.json")); string(b) != "{}" {
		t.Errorf("chains/a.json changed: %q", b)
	}
	for _, f := range []string{"chains/evil.json", "data/evil"} {
		if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	// Its other folders are its own (the workspace's top level, which
	// holds the server's paths, gains no new entries: see the README).
	mustInvoke(t, set, "fs__write_file", `{"path":`+jsonString(filepath.Join(ws, "src", "out.txt"))+`,"content":"changed"}`)
	if o := mustInvoke(t, set, "fs__read_text_file", `{"path":`+jsonString(filepath.Join(ws, "chains", "a.json"))+`}`); o.Content != "{}" {
		t.Errorf("reading a chain: %q", o.Content)
	}
}
