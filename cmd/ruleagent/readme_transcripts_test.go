package main

import (
	"bytes"
	"context"
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mvdan.cc/sh/v3/shell"
)

var updateREADME = flag.Bool("update", false, "rewrite the README's transcripts that no longer match with what this run printed")

// transcriptSetup is what a transcript needs besides the README's LLM
// (see readmeModel) and a copy of chains/, by its marker name.
var transcriptSetup = map[string]struct {
	// realModel plays the transcript on the scripted stand-in for a real
	// model (scriptedModel, named gpt-4o-mini as the tour configures it):
	// the README says so where it shows one.
	realModel bool
	env       map[string]string
	files     map[string]string // path: content, in the transcript's folder
}{
	// What the tour shows once a real model is set.
	"tour-real-model": {realModel: true},
	// The mistakes the validate example finds.
	"validate": {files: map[string]string{
		"mychains/ops.json": `{
  "ruleChain": {"id": "ops", "name": "Ops"},
  "metadata": {
    "nodes": [
      {"id": "triage", "type": "ai/agent", "name": "Triage", "configuration": {
        "url": "${global.llm_url}", "model": "${global.model}", "maxStep": "many"}},
      {"id": "shell", "type": "ai/agent", "nmae": "Shell", "configuration": {
        "url": "${global.llm_url}", "model": "${global.model}",
        "tools": [{"type": "builtin", "name": "bash", "config": {"sandbox": "off"}}]}}
    ],
    "connections": [{"fromId": "triage", "toID": "shell", "type": "Success"}]
  }
}`,
		"mychains/triage.json": `{
  "ruleChian": {"id": "triage", "name": "Triage"},
  "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "name": "Tag",
    "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}]}
}`,
	}},
	// A chain asking for less than the sandbox floor.
	"sandbox-floor": {files: map[string]string{"mychains/shell.json": `{
  "ruleChain": {"id": "shell", "name": "Shell"},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Shell", "configuration": {
    "tools": [{"type": "builtin", "name": "bash", "config": {"sandbox": "off"}}]}}]}
}`}},
	// The sessions example's chain, as the README describes it; a model
	// that answers from the session shows the memory.
	"sessions": {realModel: true, files: map[string]string{"chains/chat.json": `{
  "ruleChain": {"id": "chat", "name": "Chat", "root": true},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Chat",
    "configuration": {"url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
      "systemPrompt": "You are a friendly chat partner.", "session": {"scope": "thread"}}}]}
}`}},
}

// TestREADMETranscripts plays every transcript of the README (see
// readme_match_test.go): each command runs as written, in a folder holding
// a copy of chains/, `ruleagent` and `make run` in process, `curl` against
// the server a `make run` of the same transcript started; what it prints
// must be what the README shows. With -update, the outputs that differ
// are rewritten in README.md from this run.
func TestREADMETranscripts(t *testing.T) {
	readmePath, err := filepath.Abs(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	model, real := readmeModel(t), scriptedModel(t)
	found := transcriptMarker.FindAllStringSubmatchIndex(readme, -1)
	if len(found) < 8 {
		t.Fatalf("only %d transcripts are marked in README.md", len(found))
	}
	var rewritten strings.Builder
	last := 0
	for _, m := range found {
		indent, name := readme[m[2]:m[3]], readme[m[4]:m[5]]
		body := dedent(readme[m[6]:m[7]], indent)
		played := body
		t.Run(name, func(t *testing.T) {
			dir := copyChains(t)
			t.Chdir(dir)
			setup := transcriptSetup[name]
			if setup.realModel {
				noLLM(t)
				real(t)
			} else {
				model(t)
			}
			for k, v := range setup.env {
				t.Setenv(k, v)
			}
			for path, content := range setup.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, filepath.FromSlash(path))), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(path)), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := &player{t: t}
			defer p.close()
			var out strings.Builder
			for _, st := range parseSteps(body) {
				got := p.play(st.command)
				shown := st.output
				if !matches(normalise(st.output), normalise(got)) {
					t.Errorf("$ %s\nprints:\n%s\nthe README shows:\n%s", st.command, strings.Join(got, "\n"), strings.Join(st.output, "\n"))
					shown = displayed(got)
				}
				out.WriteString("$ " + st.command + "\n")
				for _, l := range shown {
					out.WriteString(l + "\n")
				}
			}
			played = out.String()
		})
		rewritten.WriteString(readme[last:m[6]])
		rewritten.WriteString(indentLines(played, indent))
		last = m[7]
	}
	rewritten.WriteString(readme[last:])
	if *updateREADME && rewritten.String() != readme {
		if err := os.WriteFile(readmePath, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Log("README.md updated")
	}
}

// player runs a transcript's commands.
type player struct {
	t      *testing.T
	addr   string // of the server `make run` started
	stop   func()
	served chan struct{}
}

func (p *player) play(command string) []string {
	t := p.t
	cmd, echoCode := strings.CutSuffix(command, "; echo $?")
	cmd, _ = strings.CutSuffix(cmd, " &") // make run & serves until the transcript ends
	words, err := shell.Fields(cmd, func(string) string { return "" })
	if err != nil || len(words) == 0 {
		t.Fatalf("$ %s: %v", command, err)
	}
	// NAME=value before the command sets the variable for it (and for the
	// rest of the transcript, as serving goes on).
	for len(words) > 1 && envAssignment.MatchString(words[0]) {
		k, v, _ := strings.Cut(words[0], "=")
		t.Setenv(k, v)
		words = words[1:]
	}
	switch {
	case words[0] == "make" && len(words) == 2 && words[1] == "run":
		return p.serve([]string{"serve", "--addr", "127.0.0.1:0", "--chains", "chains"})
	case words[0] == "ruleagent" || words[0] == "bin/ruleagent":
		var out syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		code := run(ctx, words[1:], strings.NewReader(""), &out, &out)
		lines := outputLines(out.String())
		if echoCode {
			lines = append(lines, strconv.Itoa(code))
		}
		return lines
	case words[0] == "curl":
		if p.addr == "" {
			t.Fatalf("$ %s: no server: the transcript starts none (make run &)", command)
		}
		script := regexp.MustCompile(`(localhost|127\.0\.0\.1):8080`).ReplaceAllString(cmd, p.addr)
		out, err := exec.Command("bash", "-c", script).CombinedOutput()
		if err != nil {
			t.Errorf("$ %s: %v", command, err)
		}
		return outputLines(string(out))
	}
	t.Fatalf("$ %s: the transcript player runs ruleagent, make run & and curl only", command)
	return nil
}

// serve runs `ruleagent serve` until the transcript ends, and returns
// what it printed once it answers.
func (p *player) serve(args []string) []string {
	t := p.t
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed to play the README's transcripts")
		}
		t.Skip("curl is not installed")
	}
	logger, logW, logFlags := slog.Default(), log.Writer(), log.Flags()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	p.served = make(chan struct{})
	go func() {
		defer close(p.served)
		if code := run(ctx, args, nil, &out, &out); code != 0 {
			t.Errorf("serve: exit %d:\n%s", code, out.String())
		}
	}()
	p.stop = func() {
		cancel()
		<-p.served
		slog.SetDefault(logger)
		log.SetOutput(logW)
		log.SetFlags(logFlags)
	}
	addr := regexp.MustCompile(`serving \S+ on http://(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			if resp, err := http.Get("http://" + m[1] + "/healthz"); err == nil {
				resp.Body.Close()
				p.addr = m[1]
				return outputLines(out.String())
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("serve did not start:\n%s", out.String())
	return nil
}

func (p *player) close() {
	if p.stop != nil {
		p.stop()
	}
}

// displayed is what -update writes of a command's output: the server's
// address as the README gives it.
func displayed(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = servedAt.ReplaceAllString(l, "127.0.0.1:8080")
	}
	return out
}

var servedAt = regexp.MustCompile(`127\.0\.0\.1:\d+`)

var envAssignment = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

func outputLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// syncBuffer is stdout and stderr of a command, in the order written.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
