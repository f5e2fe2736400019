package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/proctest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

const memoPrompt = "You are the memo agent."

// memoScript notes what it is told, and never answers "hang".
func memoScript() llmtest.Script {
	return llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if strings.Contains(r.LastUserText(), "hang") {
			return llmtest.Response{Hang: true}
		}
		return llmtest.Reply("Noted: " + r.LastUserText())
	})
}

// memoChains writes a chains folder with the memo agent, one session per
// thread unless session says otherwise.
func memoChains(t *testing.T, session ...map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	sess := map[string]any{"scope": "thread"}
	if len(session) > 0 {
		sess = session[0]
	}
	dsl, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "memo", "name": "Memo"},
		"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{}, "nodes": []any{map[string]any{
			"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": map[string]any{
				"systemPrompt": memoPrompt, "maxRetries": 0, "session": sess}}}},
	})
	if err := os.WriteFile(filepath.Join(dir, "memo.json"), dsl, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildBinary builds ruleagent once for the test.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ruleagent")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// serverProcess is `ruleagent serve` running as a process of its own.
type serverProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	logs *proctest.Buffer
	done chan struct{}
}

// startServer starts the binary on a free loopback port and waits for it
// to answer /healthz.
func startServer(t *testing.T, bin, llmURL string, args ...string) *serverProcess {
	t.Helper()
	addr := proctest.FreeAddr(t)
	full := append([]string{"serve", "--addr", addr, "--global", "llm_url=" + llmURL, "--global", "model=test-model"}, args...)
	p := &serverProcess{t: t, cmd: exec.Command(bin, full...), base: "http://" + addr, logs: &proctest.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	proctest.WaitHTTP(t, p.base+"/healthz", p.done, 20*time.Second, "serve", p.logs.String)
	return p
}

// kill sends sig and waits for the process to end.
func (p *serverProcess) kill(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// say runs the memo agent on text in thread and returns the answer.
func (p *serverProcess) say(thread, text string) map[string]any {
	p.t.Helper()
	return p.post("/api/v1/chains/memo/run", map[string]any{"input": text, "threadId": thread})
}

func (p *serverProcess) post(path string, body any) map[string]any {
	p.t.Helper()
	out, err := p.tryPost(path, body)
	if err != nil {
		p.t.Fatal(err)
	}
	return out
}

// tryPost is post for goroutines other than the test's.
func (p *serverProcess) tryPost(path string, body any) (map[string]any, error) {
	b, _ := json.Marshal(body)
	resp, err := http.Post(p.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out, nil
}

// lastMemoRequest renders the last request of the memo agent as
// "role: content" lines.
func lastMemoRequest(t *testing.T, llm *llmtest.Server) string {
	t.Helper()
	reqs := llm.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if strings.Contains(reqs[i].System(), memoPrompt) {
			var lines []string
			for _, m := range reqs[i].Messages {
				lines = append(lines, m.Role+": "+m.Content)
			}
			return strings.Join(lines, "\n")
		}
	}
	t.Fatal("no memo request")
	return ""
}

func waitLLM(t *testing.T, llm *llmtest.Server, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range llm.Requests() {
			if strings.Contains(r.LastUserText(), text) {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the LLM never got %q", text)
}

// Sessions of the real binary: the embedded store survives a kill -9 in
// the middle of a run (the next run loads the session and works), and two
// server processes share one Redis.
func TestSessionsAcrossServerProcesses(t *testing.T) {
	bin := buildBinary(t)
	llm := llmtest.NewServer(t, memoScript())
	chains := memoChains(t)

	t.Run("kill -9 mid-run, then restart", func(t *testing.T) {
		data := t.TempDir()
		p := startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		if out := p.say("t1", "remember 42"); out["outcome"] != "success" {
			t.Fatalf("first run: %v %s", out, p.logs)
		}
		go func() {
			_, _ = p.tryPost("/api/v1/chains/memo/run", map[string]any{"input": "hang in there", "threadId": "t1"})
		}()
		waitLLM(t, llm, "hang in there")
		p.kill(syscall.SIGKILL)

		p = startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		if out := p.say("t1", "what number?"); out["outcome"] != "success" {
			t.Fatalf("run after the restart: %v %s", out, p.logs)
		}
		want := "system: " + memoPrompt + "\nuser: remember 42\nassistant: Noted: remember 42\nuser: what number?"
		if got := lastMemoRequest(t, llm); got != want {
			t.Errorf("after kill -9 and restart the LLM got:\n%s\nwant:\n%s", got, want)
		}

		// The CLI: through the server while it holds the store, then on
		// the store itself once it has stopped.
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"sessions", "list", "--data", data}, nil, &out, &errb); code == 0 ||
			!strings.Contains(errb.String(), "--server") {
			t.Errorf("direct access while the server runs: exit %d %s", code, errb.String())
		}
		out.Reset()
		if code := run(context.Background(), []string{"sessions", "show", "memo:thread:t1", "--server", p.base}, nil, &out, &errb); code != 0 ||
			!strings.Contains(out.String(), "user: what number?") || !strings.Contains(out.String(), "2 turns") {
			t.Errorf("sessions show --server: exit %d\n%s%s", code, out.String(), errb.String())
		}
		p.kill(syscall.SIGTERM)
		out.Reset()
		if code := run(context.Background(), []string{"sessions", "list", "--data", data}, nil, &out, &errb); code != 0 ||
			!strings.Contains(out.String(), "memo:thread:t1") {
			t.Errorf("sessions list --data: exit %d\n%s%s", code, out.String(), errb.String())
		}
	})

	t.Run("two servers share one Redis", func(t *testing.T) {
		rs := redistest.Start(t)
		a := startServer(t, bin, llm.URL, "--chains", chains, "--data", t.TempDir(), "--session-store", rs.URL)
		b := startServer(t, bin, llm.URL, "--chains", chains, "--data", t.TempDir(), "--session-store", rs.URL)
		a.say("r1", "my name is Ada")
		if out := b.say("r1", "who am I?"); out["outcome"] != "success" {
			t.Fatalf("run on b: %v", out)
		}
		want := "system: " + memoPrompt + "\nuser: my name is Ada\nassistant: Noted: my name is Ada\nuser: who am I?"
		if got := lastMemoRequest(t, llm); got != want {
			t.Errorf("b's run got:\n%s\nwant:\n%s", got, want)
		}

		// A run on a holds the session: b refuses a second run of it.
		done := make(chan map[string]any, 1)
		go func() {
			out, _ := a.tryPost("/api/v1/chains/memo/run", map[string]any{"input": "hang on", "threadId": "r1", "runId": "run-hold"})
			done <- out
		}()
		waitLLM(t, llm, "hang on")
		if out := b.say("r1", "me too"); out["errorCode"] != "session_busy" {
			t.Errorf("b during a's run: %v", out)
		}
		a.post("/api/v1/runs/run-hold/cancel", nil)
		<-done
		if out := b.say("r1", "now?"); out["outcome"] != "success" {
			t.Errorf("b after a's run ended: %v", out)
		}
		// One server deletes; the other no longer has it.
		req, _ := http.NewRequest("DELETE", b.base+"/api/v1/sessions/memo:thread:r1", nil)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
			t.Fatalf("delete on b: %v %v", resp, err)
		}
		resp, err := http.Get(a.base + "/api/v1/sessions/memo:thread:r1")
		if err != nil || resp.StatusCode != 404 {
			t.Errorf("a still has the session: %v %v", resp, err)
		}
	})
}
