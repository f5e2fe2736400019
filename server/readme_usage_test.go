package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/sessions"
)

// readmeUsageServer serves the example chains with the usage ledger (in
// a bbolt file under data), priced by the shipped example table, and a
// scripted gpt-4o-mini that reports 41 input and 24 output tokens a call,
// as the README's usage examples show.
func readmeUsageServer(t *testing.T, data string) (base string, l *ledger.Ledger) {
	t.Helper()
	llm := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "A rule chain is a graph of nodes.",
		Usage: &llmtest.Usage{PromptTokens: 41, CompletionTokens: 24}}))
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(repoRoot, "chains", "*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644)
	}
	sess, err := sessions.OpenBolt(filepath.Join(data, sessions.BoltFile))
	if err != nil {
		t.Fatal(err)
	}
	prices, err := ledger.LoadPrices(filepath.Join(repoRoot, "docs", "prices.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ledger.StoreFor(sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err = ledger.New(ledger.Options{Store: st, Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	store, errs := OpenStoreWith(dir, NewConfig(map[string]string{"llm_url": llm.URL, "api_key": "sk-test", "model": "gpt-4o-mini"}),
		StoreOptions{Ledger: l})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// In the order a server stops: the chains, the ledger, the store.
	t.Cleanup(func() { sess.Close() })
	t.Cleanup(l.Close)
	t.Cleanup(store.Close)
	return serveLoopback(t, Handler(Options{Store: store})), l
}

// TestREADMEUsageExamples runs the shell examples of the README's Usage
// and cost section, as written, and checks the figures it shows.
func TestREADMEUsageExamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed to run the README's examples")
		}
		t.Skip("curl is not installed")
	}
	base, l := readmeUsageServer(t, t.TempDir())
	runShellExamples(t, "## Usage and cost", base, 1)
	rep, err := l.Query(t.Context(), ledger.Query{Since: mustTime(t, "1h"), Until: mustTime(t, "-1h"), By: []string{"user", "chain", "model"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rep.Groups)
	if len(rep.Groups) != 1 || rep.Groups[0].Key["user"] != "ada" || rep.Groups[0].Key["chain"] != "assistant" ||
		rep.Groups[0].Key["model"] != "gpt-4o-mini" || rep.Groups[0].InputTokens != 41 || rep.Groups[0].OutputTokens != 24 ||
		rep.Groups[0].Cost.String() != "0.00002055" {
		t.Fatalf("the README's run is not the ledger's: %s", b)
	}
}

func mustTime(t *testing.T, age string) (tm time.Time) {
	t.Helper()
	now := time.Now()
	if age[0] == '-' {
		d, _ := ledger.ParseAge(age[1:])
		return now.Add(d)
	}
	tm, err := ledger.ParseTime(age, now)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
