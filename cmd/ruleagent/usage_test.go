package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
)

const repoRoot = "../.."

// usageServer is `ruleagent serve` in process with the usage ledger in
// data, the example chains and price table, and a scripted gpt-4o-mini
// reporting 41 and 24 tokens a call. stop ends it as serve does.
func usageServer(t *testing.T, data string) (addr string, stop func()) {
	t.Helper()
	llm := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "A rule chain is a graph of nodes.",
		Usage: &llmtest.Usage{PromptTokens: 41, CompletionTokens: 24}}))
	sess, err := sessions.Open(context.Background(), "bolt", data)
	if err != nil {
		t.Fatal(err)
	}
	uf := usageFlags{prices: filepath.Join(repoRoot, "docs", "prices.example.yaml"), retention: "90d"}
	l, err := uf.open(sess, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, errs := server.OpenStoreWith(filepath.Join(repoRoot, "chains"), server.NewConfig(map[string]string{
		"llm_url": llm.URL, "api_key": "sk-test", "model": "gpt-4o-mini"}), server.StoreOptions{Ledger: l})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: server.Handler(server.Options{Store: store})}
	go func() { _ = srv.Serve(ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = srv.Close()
		store.Close()
		l.Close()
		sess.Close()
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// readmeUsageCommands returns the `$ ruleagent usage ...` lines of the
// README's Usage and cost section with the output each shows.
func readmeUsageCommands(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Usage and cost\n")
	if i < 0 {
		t.Fatal("README.md has no Usage and cost section")
	}
	s = s[i+1:]
	s = s[:strings.Index(s[3:], "\n## ")+3]
	out := map[string][]string{}
	cmd := ""
	inBlock := false
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock, cmd = !inBlock, ""
		case inBlock && strings.HasPrefix(line, "$ ruleagent usage"):
			cmd = strings.TrimPrefix(line, "$ ruleagent ")
			out[cmd] = nil
		case inBlock && cmd != "":
			out[cmd] = append(out[cmd], strings.Join(strings.Fields(line), " "))
		}
	}
	if len(out) < 2 {
		t.Fatalf("the README shows %d ruleagent usage commands", len(out))
	}
	return out
}

func fieldsOf(text string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}

// TestREADMEUsageCommand runs the README's `ruleagent usage` examples
// through a server and checks they print what the README shows; then the
// first again from the store itself once the server has stopped, and
// that a store a server holds is refused with the way out.
func TestREADMEUsageCommand(t *testing.T) {
	data := t.TempDir()
	addr, stop := usageServer(t, data)
	body, _ := json.Marshal(map[string]any{"input": "What is a rule chain?", "metadata": map[string]any{"userId": "ada"}})
	resp, err := http.Post("http://"+addr+"/api/v1/chains/assistant/run", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %v %v", resp, err)
	}
	resp.Body.Close()
	cmds := readmeUsageCommands(t)
	run1 := func(line string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), strings.Fields(strings.ReplaceAll(line, "127.0.0.1:8080", addr)), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	for line, want := range cmds {
		code, out, errs := run1(line)
		if code != 0 || strings.Join(fieldsOf(out), "\n") != strings.Join(want, "\n") {
			t.Errorf("ruleagent %s: exit %d, stderr %q\n got:\n%s\nwant (README):\n%s", line, code, errs, out, strings.Join(want, "\n"))
		}
	}
	// The bolt file is the server's while it runs.
	code, _, errs := run1("usage --data " + data)
	if code == 0 || !strings.Contains(errs, "--server") {
		t.Errorf("usage on a held store: exit %d, %q", code, errs)
	}
	stop()
	first := "usage --by user --since 7d --server 127.0.0.1:8080"
	code, out, errs := run1("usage --by user --since 7d --data " + data + " --prices " + filepath.Join(repoRoot, "docs", "prices.example.yaml"))
	if code != 0 || strings.Join(fieldsOf(out), "\n") != strings.Join(cmds[first], "\n") {
		t.Errorf("usage from the store: exit %d %q\n%s", code, errs, out)
	}
	// --json prints the report.
	code, out, _ = run1("usage --by day --json --data " + data)
	var rep ledger.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Groups) != 1 || rep.Total.Cost.String() != "0.00002055" {
		t.Errorf("usage --json: %d %s", code, out)
	}
	if code, _, errs := run1("usage --by nothing --data " + data); code != exitUsage || !strings.Contains(errs, `unknown dimension "nothing"`) {
		t.Errorf("a bad --by: exit %d %q", code, errs)
	}
}
