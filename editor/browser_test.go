package editor_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/editor"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// The browser tests (browser/*.mjs) drive the built editor in headless
// Debian Chromium against the real `ruleagent serve` and the scripted LLM.
// Locally they skip when chromium, the editor's npm packages or its build
// are missing; under CI they fail instead, as CI installs all three.
func TestBrowser(t *testing.T) {
	env := browserEnv(t)
	rules := filepath.Join(goEnv(t, "GOMODCACHE"), "github.com", "rulego", "rulego@v0.37.0", "testdata", "rule")
	if _, err := os.Stat(rules); err != nil {
		t.Fatalf("RuleGo's test chains: %v (go mod download)", err)
	}
	g := newGates(t)
	llm := llmtest.NewServer(t, script(g))
	work, chains := workDir(t, map[string]string{"helper.json": helperChain, "guarded.json": guardedChain, "pair.json": pairChain})
	copyExample(t, env.root, chains, "order-status.json")
	base := serve(t, env.bin, work, chains, llm.URL)
	env.run(t, "e2e.mjs", "BASE_URL="+base, "CHAINS_DIR="+chains, "RULEGO_RULES="+rules, "GATES_URL="+g.url)
}

// TestBrowserSignIn opens the editor of a server started with --token:
// the page asks for the token, keeps it for the tab only and sends it on
// every request and on the WebSocket (browser/signin.mjs).
func TestBrowserSignIn(t *testing.T) {
	env := browserEnv(t)
	llm := llmtest.NewServer(t, script(nil))
	work, chains := workDir(t, nil)
	copyExample(t, env.root, chains, "order-status.json")
	token := "s3cret+/token"
	base := serve(t, env.bin, work, chains, llm.URL, "--token", token)
	env.run(t, "signin.mjs", "BASE_URL="+base, "TOKEN="+token)
}

// TestBrowserRejoin reloads the editor's page while a run streams: the Run
// tab opens again on the chat and shows the whole run, read again from the
// server's event log and then live, until its end (browser/rejoin.mjs).
func TestBrowserRejoin(t *testing.T) {
	env := browserEnv(t)
	llm := llmtest.NewServer(t, script(nil))
	work, chains := workDir(t, map[string]string{"storyteller.json": storytellerChain})
	base := serve(t, env.bin, work, chains, llm.URL)
	env.run(t, "rejoin.mjs", "BASE_URL="+base, "STORY="+story)
}

// TestBrowserCost runs an agent on a server with a price table: the Run
// panel's timeline shows each turn's tokens, cost and time to first token,
// and the run's cost, the usage ledger's (browser/cost.mjs).
func TestBrowserCost(t *testing.T) {
	env := browserEnv(t)
	llm := llmtest.NewServer(t, script(nil))
	work, chains := workDir(t, map[string]string{"costly.json": costlyChain})
	prices := filepath.Join(work, "prices.yaml")
	write(t, prices, "currency: USD\nmodels:\n  - {model: scripted, input: 1.5, output: 6}\n")
	base := serve(t, env.bin, work, chains, llm.URL, "--prices", prices)
	env.run(t, "cost.mjs", "BASE_URL="+base)
}

// TestBrowserReplayAndFork opens a recorded run of the costly agent after
// the fact (answer, timeline, cost, steps on the canvas) and forks it
// from its second LLM step with the tool result edited
// (browser/replay.mjs).
func TestBrowserReplayAndFork(t *testing.T) {
	env := browserEnv(t)
	llm := llmtest.NewServer(t, script(nil))
	work, chains := workDir(t, map[string]string{"costly.json": costlyChain})
	prices := filepath.Join(work, "prices.yaml")
	write(t, prices, "currency: USD\nmodels:\n  - {model: scripted, input: 1.5, output: 6}\n")
	base := serve(t, env.bin, work, chains, llm.URL, "--prices", prices)
	env.run(t, "replay.mjs", "BASE_URL="+base)
}

// costlyChain's agent reads a file, then answers (see script).
const costlyChain = `{
  "ruleChain": {"id": "costly", "name": "Costly", "root": true},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Costly", "configuration": {
    "systemPrompt": "You are the costly agent.", "maxStep": 3, "workspace": "workspace",
    "tools": [{"type": "builtin", "name": "read"}]}}], "connections": []}
}`

type browser struct {
	root, chromium, bin string
}

var built struct {
	once sync.Once
	bin  string
	err  error
}

// browserEnv checks what the browser tests need and builds the binary
// once for all of them.
func browserEnv(t *testing.T) browser {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	root := repoRoot(t)
	chromium, err := exec.LookPath("chromium")
	need(t, err == nil, "chromium is not installed: apt-get install -y --no-install-recommends chromium")
	_, err = os.Stat(filepath.Join(root, "editor", "node_modules", "playwright-core"))
	need(t, err == nil, "the editor's npm packages are missing: make editor")
	need(t, editor.Built(), "this binary holds no editor build: make editor, then go test")
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "ruleagent-editor-test-")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "ruleagent")
		build := exec.Command("go", "build", "-o", built.bin, "./cmd/ruleagent")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return browser{root: root, chromium: chromium, bin: built.bin}
}

// TestMain removes the binary the browser tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.bin != "" {
		_ = os.RemoveAll(filepath.Dir(built.bin))
	}
	os.Exit(code)
}

// skipStatus is the exit status of a script whose server lacks a
// behaviour it needs (browser/harness.mjs): it prints "SKIP <reason>".
const skipStatus = 3

// run runs a browser script with the environment it needs.
func (b browser) run(t *testing.T, script string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	artefacts := filepath.Join(b.root, "editor", "test-artifacts")
	cmd := exec.CommandContext(ctx, "node", filepath.Join("browser", script))
	cmd.Dir = filepath.Join(b.root, "editor")
	cmd.Env = append(os.Environ(), append(env, "CHROMIUM="+b.chromium, "ARTEFACTS="+artefacts)...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s (screenshots in %s):\n%s", script, artefacts, out)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == skipStatus {
		_, reason, _ := strings.Cut(string(out), "SKIP ")
		t.Skip(strings.TrimSpace(reason))
	}
	if err != nil {
		t.Fatalf("%s failed: %v", script, err)
	}
}

// workDir makes a server's folder: chains (with the given files) and a
// workspace holding notes.txt.
func workDir(t *testing.T, files map[string]string) (work, chains string) {
	t.Helper()
	work = t.TempDir()
	chains = filepath.Join(work, "chains")
	for _, dir := range []string{chains, filepath.Join(work, "workspace")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(work, "workspace", "notes.txt"), "remember the milk\n")
	for name, content := range files {
		write(t, filepath.Join(chains, name), content)
	}
	return work, chains
}

// copyExample copies one of the example chains of the repository's chains/.
func copyExample(t *testing.T, root, chains, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "chains", name))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(chains, name), string(b))
}

// gates are where the scripted LLM holds an answer until the browser
// script has seen the state it holds, instead of hoping that a delay is
// long enough on a loaded machine: e2e.mjs releases one with POST
// GATES_URL/NAME. "helper" holds the helper's first answer, so that its
// tool node is seen lit while it runs; "answer" holds the demo agent's
// answer after a few chunks, so that part of it is seen before the rest.
// Released once, a gate stays open.
type gates struct {
	url            string
	helper, answer chan struct{}
}

func newGates(t *testing.T) *gates {
	t.Helper()
	g := &gates{helper: make(chan struct{}), answer: make(chan struct{})}
	var mu sync.Mutex
	open := map[string]chan struct{}{"helper": g.helper, "answer": g.answer}
	release := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		c, ok := open[name]
		if ok {
			close(c)
			delete(open, name)
		}
		return ok
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !release(strings.TrimPrefix(r.URL.Path, "/")) {
			http.Error(w, "no such gate, or released already", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() {
		srv.Close()
		for _, name := range []string{"helper", "answer"} {
			release(name)
		}
	})
	g.url = srv.URL
	return g
}

// script answers the demo agent the browser test builds (a builtin call and
// a sub-agent call, then a streamed answer), the helper sub-agent, and a
// "slow" message that never gets an answer until it is stopped. With g,
// the helper's answer and the demo agent's are held at g's gates (a nil
// channel holds nothing).
func script(g *gates) llmtest.Script {
	answer := "The demo agent read your notes and asked its helper; here is the end of answer."
	var helperGate, answerGate chan struct{}
	if g != nil {
		helperGate, answerGate = g.helper, g.answer
	}
	return llmtest.Route(
		// The helper answers once the canvas has been seen showing its
		// tool node lit.
		llmtest.Rule{Match: llmtest.SystemContains("You are the helper"), Script: llmtest.Always(llmtest.Response{Text: "helper says hi", ChunkSize: 2,
			ChunkDelay: 20 * time.Millisecond, Hold: helperGate})},
		llmtest.Rule{Match: llmtest.SystemContains("You are the guarded agent"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("guarded says: " + res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("read", `{"path":"notes.txt"}`))
		})},
		// The two agents of pair.json run at once; both have the tool read,
		// only the reader calls it, once the quiet one is running.
		llmtest.Rule{Match: llmtest.SystemContains("You are the reader"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("the reader read: " + res[0].Content)
			}
			return llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("read", `{"path":"notes.txt"}`)}, ChunkDelay: 400 * time.Millisecond}
		})},
		llmtest.Rule{Match: llmtest.SystemContains("You are the quiet one"), Script: llmtest.Always(llmtest.Response{
			Text: "the quiet one reads nothing at all", ChunkSize: 4, ChunkDelay: 150 * time.Millisecond})},
		llmtest.Rule{Match: llmtest.UserContains("slow"), Script: llmtest.Always(llmtest.Response{Hang: true})},
		// The costly agent reports its tokens, so that its cost is known.
		llmtest.Rule{Match: llmtest.SystemContains("You are the costly agent"), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Response{Text: "Your notes: " + strings.TrimSpace(res[0].Content), ChunkSize: 4, ChunkDelay: 20 * time.Millisecond,
					Usage: &llmtest.Usage{PromptTokens: 41, CompletionTokens: 24}}
			}
			return llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("read", `{"path":"notes.txt"}`)}, ChunkDelay: 30 * time.Millisecond,
				Usage: &llmtest.Usage{PromptTokens: 300, CompletionTokens: 100}}
		})},
		// The storyteller answers for about 5 s: long enough to reload the
		// page in the middle.
		llmtest.Rule{Match: llmtest.SystemContains("You are the storyteller"), Script: llmtest.Always(llmtest.Response{
			Text: story, ChunkSize: 4, ChunkDelay: 60 * time.Millisecond})},
		llmtest.Rule{Match: llmtest.SystemContains("You are the demo agent"), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("read", `{"path":"notes.txt"}`), llmtest.Call("Helper", `{"message":"say hi"}`)),
			// Part of the answer shows, then the rest once it was seen.
			llmtest.Response{Text: answer, ChunkSize: 3, ChunkDelay: 10 * time.Millisecond, Hold: answerGate, HoldAfter: 10},
		)},
	)
}

// story is what the storyteller tells.
const story = "Once upon a time a rule chain learned to tell stories, one chunk after the other, " +
	"and a reader who reloaded the page in the middle still read every word of it, in order, once. The end."

const storytellerChain = `{
  "ruleChain": {"id": "storyteller", "name": "Storyteller", "root": true},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Storyteller", "configuration": {
    "systemPrompt": "You are the storyteller.", "maxStep": 2}}], "connections": []}
}`

const helperChain = `{
  "ruleChain": {"id": "helper", "name": "Helper", "root": true, "additionalInfo": {"description": "Says hi."}},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Helper", "configuration": {
    "url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
    "systemPrompt": "You are the helper.", "maxStep": 3}}], "connections": []}
}`

// pairChain runs two agents at once, both with the tool read.
const pairChain = `{
  "ruleChain": {"id": "pair", "name": "Pair", "root": true},
  "metadata": {"nodes": [
    {"id": "fork", "type": "jsTransform", "name": "Fork", "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}},
    {"id": "reader", "type": "ai/agent", "name": "Reader", "configuration": {"systemPrompt": "You are the reader.", "maxStep": 3,
      "tools": [{"type": "builtin", "name": "read"}]}},
    {"id": "quiet", "type": "ai/agent", "name": "Quiet", "configuration": {"systemPrompt": "You are the quiet one.", "maxStep": 3,
      "tools": [{"type": "builtin", "name": "read"}]}}],
    "connections": [{"fromId": "fork", "toId": "reader", "type": "Success"}, {"fromId": "fork", "toId": "quiet", "type": "Success"}]}
}`

// guardedChain's agent may read only with a person's approval.
const guardedChain = `{
  "ruleChain": {"id": "guarded", "name": "Guarded", "root": true},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Guarded", "configuration": {
    "systemPrompt": "You are the guarded agent.", "maxStep": 3, "approval": {"tools": ["read"]},
    "tools": [{"type": "builtin", "name": "read"}]}}], "connections": []}
}`

// serve starts `ruleagent serve` on a free loopback port and returns its URL.
func serve(t *testing.T, bin, dir, chains, llmURL string, flags ...string) string {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--chains", chains, "--data", filepath.Join(dir, "data"),
		"--global", "llm_url=" + llmURL, "--global", "model=scripted", "--global", "api_key=test"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	stdout, stderr := startServe(t, cmd)
	found := make(chan string, 1)
	go func() {
		url := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := url.FindString(sc.Text()); m != "" {
				found <- m
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("ruleagent serve printed no URL; stderr:\n%s", stderr.String())
		return ""
	}
}

// startServe starts cmd (a `ruleagent serve`), returns its standard output
// and what it writes to standard error, and stops it when the test ends
// (an interrupt, a kill after 15 s), logging its standard error if the test
// failed.
func startServe(t *testing.T, cmd *exec.Cmd) (io.Reader, *strings.Builder) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	return stdout, &stderr
}

func need(t *testing.T, ok bool, msg string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s", dir)
	}
	return dir
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
