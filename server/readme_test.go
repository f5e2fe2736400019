package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// readmeSection returns the text of README.md's section titled heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q section", heading)
	}
	s = s[i+len(heading)+2:]
	if j := strings.Index(s, "\n## "); j >= 0 {
		s = s[:j]
	}
	return s
}

// shellBlocks returns the ```sh blocks of a README section.
func shellBlocks(section string) []string {
	var out []string
	for _, part := range strings.Split(section, "```sh\n")[1:] {
		if end := strings.Index(part, "```"); end >= 0 {
			out = append(out, part[:end])
		}
	}
	return out
}

// TestREADMECurlExamples runs every curl example of the README's HTTP API
// section, as written, against a real server with the example chains and a
// scripted LLM. Examples that expect success use curl -f, so an error
// status fails the test.
func TestREADMECurlExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed to run the README's examples")
		}
		t.Skip("curl is not installed")
	}
	llm := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.UserContains("long story"), Script: llmtest.Always(llmtest.Response{
			Text: strings.Repeat("Once upon a time. ", 60), ChunkSize: 6, ChunkDelay: 100 * time.Millisecond})},
		llmtest.Rule{Match: func(r *llmtest.Request) bool {
			return strings.Contains(r.LastUserText(), "Where is order") || strings.Contains(r.LastUserText(), "Where is my order")
		}, Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("Your order: " + res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-1001"}`))
		})},
		llmtest.Rule{Match: func(*llmtest.Request) bool { return true }, Script: llmtest.Always(llmtest.Reply("A rule chain is a graph of nodes."))},
	))
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "chains", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	// As serve keeps them: the runs' events in the embedded store, and
	// their records (Recorded runs).
	rl, _ := boltRunLog(t, stateFile(t))
	store, errs := OpenStoreWith(dir, NewConfig(map[string]string{"llm_url": llm.URL, "api_key": "sk-test", "model": "test-model"}),
		StoreOptions{RunLog: rl, Recording: Recording{Records: runrecord.NewMemory(runrecord.Options{})}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	base := serveLoopback(t, Handler(Options{Store: store}))

	runShellExamples(t, "## HTTP API", base, 8)
}

// runShellExamples runs the ```sh blocks of a README section in order, as
// written but for the server's address, in one working folder (returned),
// failing the test for each that fails; the section must hold at least
// min of them.
func runShellExamples(t *testing.T, heading, base string, min int) string {
	t.Helper()
	blocks := shellBlocks(readmeSection(t, heading))
	if len(blocks) < min {
		t.Fatalf("only %d shell examples found", len(blocks))
	}
	work := t.TempDir()
	for i, block := range blocks {
		script := "set -e -o pipefail\n" + strings.ReplaceAll(block, "http://127.0.0.1:8080", base)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README example %d failed: %v\n%s\noutput: %s", i+1, err, block, out)
		}
	}
	return work
}
