package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/proctest"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// writeChains writes chain files into a new folder and returns it.
func writeChains(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// agentFile is a chain of one ai/agent node; extra holds more of its
// configuration as JSON members (`"maxStep": 3`).
func agentFile(id, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return `{"ruleChain": {"id": "` + id + `", "name": "` + id + `"}, "metadata": {"nodes": [{"id": "agent", "type": "ai/agent",
  "configuration": {"url": "${global.llm_url}", "model": "${global.model}"` + extra + `}}], "connections": []}}`
}

// resetSandbox restores the process's sandbox defaults after a command
// set them.
func resetSandbox(t *testing.T) {
	t.Cleanup(func() { _ = sandbox.SetDefaults(sandbox.Defaults{}) })
}

// validate, run and serve decide alike: what validate refuses, run refuses
// too, for the same reason at the same JSON path, and nothing is created.
func TestValidateRunAndServeAgree(t *testing.T) {
	resetSandbox(t)
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("fine")))
	setLLM(t, srv.URL)
	t.Setenv("RULEAGENT_GLOBAL_WORKSPACE", "unset below")
	os.Unsetenv("RULEAGENT_GLOBAL_WORKSPACE")
	cases := []struct{ name, dsl, path, says string }{
		{"no ruleChain", `{"ruleChian": {"id": "c"}, "metadata": {"nodes": [{"id": "a", "type": "log", "configuration": {}}]}}`, "ruleChain", "missing"},
		{"sandbox off", agentFile("c", `"tools": [{"type": "builtin", "name": "bash", "config": {"sandbox": "off"}}]`),
			"metadata.nodes[0].configuration.tools[0].config.sandbox", `below the operator's sandbox floor "best-effort"`},
		{"unset global", agentFile("c", `"workspace": "${global.workspace}", "tools": [{"type": "builtin", "name": "read"}]`),
			"metadata.nodes[0].configuration.workspace", "${global.workspace} is not set"},
		{"typed field", agentFile("c", `"maxStep": "abc"`), "metadata.nodes[0].configuration.maxStep", `the string "abc" is not an integer`},
		{"bad JSON", "{\n  \"ruleChain\": {\"id\": \"c\"},\n  \"metadata\": {\"nodes\": [}\n}", "", "not valid JSON at line 3, column 26"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeChains(t, map[string]string{"c.json": c.dsl})
			t.Chdir(dir)
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"validate", "--json", "c.json"}, nil, &out, &errb)
			var got struct {
				Errors []struct{ Path, Message string }
			}
			if code != exitFailure || json.Unmarshal(out.Bytes(), &got) != nil || len(got.Errors) == 0 ||
				got.Errors[0].Path != c.path || !strings.Contains(got.Errors[0].Message, c.says) {
				t.Fatalf("validate: exit %d %s %s", code, out.String(), errb.String())
			}
			out.Reset()
			errb.Reset()
			code = run(context.Background(), []string{"run", "c.json", "--input", "hi"}, nil, &out, &errb)
			if code == 0 || !strings.Contains(errb.String(), c.path+": ") || !strings.Contains(errb.String(), c.says) {
				t.Fatalf("run: exit %d, stderr %s", code, errb.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Fatalf("the folder holds %v", entries)
			}
		})
	}
}

// A folder validates as a whole, its chains resolving each other; one file
// of it is checked against its siblings, as run finds them.
func TestValidateFolder(t *testing.T) {
	resetSandbox(t)
	dir := writeChains(t, map[string]string{
		"a.json": agentFile("a", `"tools": [{"type": "agent", "targetId": "b"}]`),
		"b.json": agentFile("b", `"tools": [{"type": "rulechain", "name": "c", "targetId": "c"}]`),
		"c.json": `{"ruleChain": {"id": "c"}, "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`,
	})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"validate", dir}, nil, &out, &errb); code != 0 || out.String() != "ok: 3 chain files, 0 warnings\n" {
		t.Fatalf("folder: exit %d %q %s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"validate", filepath.Join(dir, "a.json")}, nil, &out, &errb); code != 0 || out.String() != "ok: 1 chain file, 0 warnings\n" {
		t.Fatalf("one file of the folder: exit %d %q %s", code, out.String(), errb.String())
	}
	empty := t.TempDir()
	if code := run(context.Background(), []string{"validate", empty}, nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "holds no chain files") {
		t.Fatalf("empty folder: exit %d %s", code, errb.String())
	}
}

// Running one chain of a folder creates its own workspace at most, never
// the workspaces of the other chains, which load but do not run.
func TestRunCreatesNoSiblingWorkspace(t *testing.T) {
	resetSandbox(t)
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("done")))
	setLLM(t, srv.URL)
	dir := writeChains(t, map[string]string{
		"a.json": agentFile("a", `"workspace": "ws-a", "tools": [{"type": "builtin", "name": "read"}]`),
		"b.json": agentFile("b", `"workspace": "ws-b", "tools": [{"type": "builtin", "name": "read"}, {"type": "builtin", "name": "bash"}]`),
	})
	t.Chdir(dir)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run", "a.json", "--input", "hi"}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "done") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
	for _, ws := range []string{"ws-a", "ws-b"} {
		if _, err := os.Stat(ws); !os.IsNotExist(err) {
			t.Errorf("%s exists after a run that read no file: %v", ws, err)
		}
	}
}

// serve --chains with a folder that does not exist is a mistake, not a
// server with no chains.
func TestServeRefusesAMissingChainsFolder(t *testing.T) {
	resetSandbox(t)
	var out, errb bytes.Buffer
	missing := filepath.Join(t.TempDir(), "chians")
	// Bounded: a server that starts anyway serves until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code := run(ctx, []string{"serve", "--addr", proctest.FreeAddr(t), "--data", t.TempDir(), "--chains", missing}, nil, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "--chains "+missing+": no such folder") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// A policy file that forbids lowering the floor stops a server started
// with --allow-sandbox-off.
func TestServeRefusesASwitchThePolicyForbids(t *testing.T) {
	resetSandbox(t)
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	code := run(ctx, []string{"serve", "--addr", proctest.FreeAddr(t), "--data", t.TempDir(), "--chains", t.TempDir(),
		"--policy", `{"sandbox": {"allowOff": false}}`, "--allow-sandbox-off"}, nil, &out, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), `--allow-sandbox-off: the policy file forbids it`) {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// The banner tells the truth when no global LLM is set: chains that carry
// their own url and model are configured; the others are named.
func TestServeBannerReadsTheChainsLLM(t *testing.T) {
	resetSandbox(t)
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"} {
		t.Setenv(k, "")
	}
	own := `{"ruleChain": {"id": "own"}, "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "configuration": {"url": "http://127.0.0.1:9/v1", "model": "m"}}]}}`
	dir := writeChains(t, map[string]string{"own.json": own})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	_, out, _, _ := serve(t, ctx, "--chains", dir)
	if b := out.String(); !strings.Contains(b, "LLM: set by each agent chain") || strings.Contains(b, "not configured") ||
		!strings.Contains(b, "sandbox: best-effort, a floor no chain may lower") {
		t.Fatalf("banner:\n%s", b)
	}
	stop()

	// A URL without a model is half a configuration: the demo model does
	// not stand in, and the chain that needs the model is named.
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
	dir = writeChains(t, map[string]string{"own.json": own, "bare.json": agentFile("bare", "")})
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	_, out, _, _ = serve(t, ctx, "--chains", dir)
	if b := out.String(); !strings.Contains(b, "LLM: not configured for 1 chain (bare)") {
		t.Fatalf("banner:\n%s", b)
	}
}

// TestREADMEValidateTranscript runs the Command line section's validate
// transcript: the example chains, then a folder with the mistakes shown,
// and compares every line.
func TestREADMEValidateTranscript(t *testing.T) {
	resetSandbox(t)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block := string(readme)
	block = block[strings.Index(block, "  $ ruleagent validate chains/\n"):]
	block = block[:strings.Index(block, "  ```")]
	var transcripts [][]string // each: the command, then its output
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		line = strings.TrimPrefix(line, "  ")
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			transcripts = append(transcripts, []string{cmd})
			continue
		}
		transcripts[len(transcripts)-1] = append(transcripts[len(transcripts)-1], line)
	}
	if len(transcripts) != 2 {
		t.Fatalf("the README's transcript changed shape: %q", block)
	}
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "mychains"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"ops.json": `{"ruleChain": {"id": "ops", "name": "Ops"}, "metadata": {"firstNodeIndex": 0, "nodes": [
  {"id": "agent", "type": "ai/agent", "configuration": {"url": "${global.llm_url}", "model": "${global.model}", "maxStep": "many"}},
  {"id": "shell", "type": "ai/agent", "nmae": "Shell", "configuration": {"url": "${global.llm_url}", "model": "${global.model}",
    "tools": [{"type": "builtin", "name": "bash", "config": {"sandbox": "off"}}]}}],
 "connections": [{"fromId": "agent", "toID": "shell", "type": "Success"}]}}`,
		"triage.json": `{"ruleChian": {"id": "triage"}, "metadata": {"nodes": [{"id": "log", "type": "log", "configuration": {}}]}}`,
	} {
		if err := os.WriteFile(filepath.Join(work, "mychains", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, tr := range transcripts {
		t.Chdir(work)
		if i == 0 {
			t.Chdir(root)
		}
		var out bytes.Buffer
		run(context.Background(), strings.Fields(tr[0])[1:], nil, &out, &out)
		if got, want := strings.TrimRight(out.String(), "\n"), strings.Join(tr[1:], "\n"); got != want {
			t.Errorf("$ %s\ngot:\n%s\nREADME:\n%s", tr[0], got, want)
		}
	}
}
