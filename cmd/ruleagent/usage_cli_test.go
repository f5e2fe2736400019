package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/tools/limits"
)

// cliUsageLLM is a scripted gpt-4o-mini reporting 41 and 24 tokens a call
// (65: a budget of 100 tokens a day is crossed by the second call).
func cliUsageLLM(t *testing.T) *llmtest.Server {
	t.Helper()
	llm := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "A rule chain is a graph of nodes.",
		Usage: &llmtest.Usage{PromptTokens: 41, CompletionTokens: 24}}))
	setLLM(t, llm.URL)
	t.Setenv("OPENAI_MODEL", "gpt-4o-mini")
	t.Setenv("RULEAGENT_PRICES", "")
	t.Setenv("RULEAGENT_BUDGETS", "")
	return llm
}

// runCosts returns the cost of each RUN_FINISHED of JSON lines of events.
func runCosts(t *testing.T, lines string) []string {
	t.Helper()
	var costs []string
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		var ev struct {
			Type     string
			Metadata struct{ Cost, Currency string }
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if ev.Type == "RUN_FINISHED" {
			costs = append(costs, ev.Metadata.Cost+" "+ev.Metadata.Currency)
		}
	}
	return costs
}

// usageReport is `ruleagent usage --json` of the store under data.
func usageReport(t *testing.T, data string, args ...string) ledger.Report {
	t.Helper()
	var out, errb bytes.Buffer
	args = append([]string{"usage", "--data", data, "--json"}, args...)
	if code := run(context.Background(), args, nil, &out, &errb); code != 0 {
		t.Fatalf("usage: exit %d: %s", code, errb.String())
	}
	var rep ledger.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return rep
}

// TestCLIRunsRecordIntoTheLedger: `ruleagent run --data DIR` records its
// calls into the usage ledger of DIR's embedded store, priced by --prices
// (the cost on its RUN_FINISHED too), and `ruleagent usage` shows them; a
// daily budget (--budgets) stops the run that finds it spent with the
// typed error, before any LLM call; a run given no data folder, session
// store, prices or budgets records nothing and writes no file.
func TestCLIRunsRecordIntoTheLedger(t *testing.T) {
	llm := cliUsageLLM(t)
	data := filepath.Join(t.TempDir(), "data")
	prices := filepath.Join(repoRoot, "docs", "prices.example.yaml")
	budgets := `{"users": {"ada": {"tokensPerDay": 100}}}`
	runOnce := func() (string, error) {
		var out, errb bytes.Buffer
		err := runRun(context.Background(), []string{repoChain("assistant.json"), "--input", "What is a rule chain?", "--json", "--user", "ada",
			"--data", data, "--prices", prices, "--budgets", budgets}, nil, &out, &errb)
		return out.String(), err
	}
	var costs []string
	for i := range 2 {
		out, err := runOnce()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		costs = append(costs, runCosts(t, out)...)
	}
	if len(costs) != 2 || costs[0] != costs[1] || !strings.HasSuffix(costs[0], " USD") || strings.HasPrefix(costs[0], " ") {
		t.Fatalf("the runs' costs: %q", costs)
	}
	// 130 tokens of 100: the third run is refused, with the typed error,
	// before it reaches the model.
	before := len(llm.Requests())
	_, err := runOnce()
	var ex *limits.Exceeded
	if !errors.As(err, &ex) || ex.Limit != ledger.LimitUserTokens {
		t.Fatalf("the run past ada's budget: %v, want a *limits.Exceeded of %s", err, ledger.LimitUserTokens)
	}
	if n := len(llm.Requests()); n != before {
		t.Fatalf("the refused run reached the LLM (%d requests)", n-before)
	}

	rep := usageReport(t, data, "--by", "user,chain", "--prices", prices)
	if len(rep.Groups) != 1 || rep.Groups[0].Key["user"] != "ada" || rep.Groups[0].Key["chain"] != "assistant" {
		t.Fatalf("usage groups: %+v", rep.Groups)
	}
	tot := rep.Total
	one, _ := ledger.ParseAmount(strings.TrimSuffix(costs[0], " USD"))
	if tot.Calls != 2 || tot.InputTokens != 82 || tot.OutputTokens != 48 || tot.Cost != 2*one || rep.Currency != "USD" {
		t.Fatalf("usage total %+v %s, want 2 calls, 82+48 tokens, 2 × %s", tot, rep.Currency, costs[0])
	}
	if rep := usageReport(t, data, "--by", "source"); len(rep.Groups) != 1 || rep.Groups[0].Key["source"] != "cli" {
		t.Fatalf("usage by source: %+v", rep.Groups)
	}

	// A store another process holds (a server on the same folder) is
	// refused, with the way out, rather than left unrecorded.
	held, err := sessions.Open(context.Background(), "bolt", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runOnce(); !errors.Is(err, sessions.ErrLocked) || !strings.Contains(err.Error(), "--usage-retention off") {
		t.Fatalf("a run on a held store: %v", err)
	}
	held.Close()

	// Nothing asked for a ledger: none is kept, no file is written.
	chain, err := filepath.Abs(repoChain("assistant.json"))
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	t.Chdir(work)
	var out, errb bytes.Buffer
	if err := runRun(context.Background(), []string{chain, "--input", "hi"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Fatalf("a run without --data wrote %v", ents)
	}
}

// TestMCPStdioRecordsIntoTheLedger: `ruleagent mcp --stdio --data DIR`
// records each tool call's run into the usage ledger of DIR's store, and
// a chain's daily budget refuses the call that finds it spent, before any
// LLM call; `ruleagent usage` shows the calls once the client has gone.
func TestMCPStdioRecordsIntoTheLedger(t *testing.T) {
	llm := cliUsageLLM(t)
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, clientOut, stderr, code := stdioMCP(t, ctx, "mcp", "--stdio", "--chains", repoChain(""), "--data", data,
		"--prices", filepath.Join(repoRoot, "docs", "prices.example.yaml"), "--budgets", `{"chains": {"assistant": {"tokensPerDay": 100}}}`)
	call := func() (*mcp.CallToolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = "assistant"
		req.Params.Arguments = map[string]any{"message": "What is a rule chain?"}
		return c.CallTool(ctx, req)
	}
	// Each result carries its run's usage and cost in _meta; the ledger
	// holds their sums.
	var metaTokens int64
	var metaCost ledger.Nanos
	for i := range 2 {
		res, err := call()
		if err != nil || res.IsError {
			t.Fatalf("call %d: %+v %v", i+1, res, err)
		}
		u := stdioRunUsage(t, res)
		if u == nil || len(u.Usage) == 0 || u.Cost == "" || u.Currency != "USD" {
			t.Fatalf("call %d: _meta %+v, want the run's usage and cost in USD", i+1, res.Meta)
		}
		for _, e := range u.Usage {
			metaTokens += e.TotalTokens
		}
		c, err := ledger.ParseAmount(u.Cost)
		if err != nil {
			t.Fatal(err)
		}
		metaCost += c
	}
	before := len(llm.Requests())
	res, err := call()
	if err == nil && !res.IsError {
		t.Fatalf("the call past the chain's budget succeeded: %+v", res)
	}
	if err == nil && !strings.Contains(res.Content[0].(mcp.TextContent).Text, `budgets chains["assistant"].tokensPerDay`) {
		t.Fatalf("the refusal does not name the budget: %+v", res.Content)
	}
	if n := len(llm.Requests()); n != before {
		t.Fatalf("the refused call reached the LLM (%d requests)", n-before)
	}
	if err == nil && stdioRunUsage(t, res) != nil {
		t.Fatalf("the refused call, which used nothing, carries usage: %+v", res.Meta)
	}
	clientOut.Close()
	select {
	case got := <-code:
		if got != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", got, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not end when stdin closed")
	}
	rep := usageReport(t, data, "--by", "chain,source")
	if len(rep.Groups) != 1 || rep.Groups[0].Key["chain"] != "assistant" || rep.Groups[0].Key["source"] != "mcp" ||
		rep.Total.Calls != 2 || rep.Total.TotalTokens != 130 || rep.Total.Cost == 0 {
		t.Fatalf("usage: %+v total %+v", rep.Groups, rep.Total)
	}
	if metaTokens != rep.Total.TotalTokens || metaCost != rep.Total.Cost {
		t.Fatalf("the results' _meta add up to %d tokens costing %v, the ledger holds %d costing %v",
			metaTokens, metaCost, rep.Total.TotalTokens, rep.Total.Cost)
	}
}

// stdioRunUsage reads a result's run usage (mcpserve.UsageMetaKey), nil
// when it has none.
func stdioRunUsage(t *testing.T, res *mcp.CallToolResult) *struct {
	Usage          []events.TokenUsage
	Cost, Currency string
} {
	t.Helper()
	if res.Meta == nil || res.Meta.AdditionalFields[mcpserve.UsageMetaKey] == nil {
		return nil
	}
	raw, err := json.Marshal(res.Meta.AdditionalFields[mcpserve.UsageMetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var u struct {
		Usage          []events.TokenUsage
		Cost, Currency string
	}
	if err := json.Unmarshal(raw, &u); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return &u
}

// TestTerminalRunShowsItsCost: the terminal view of `ruleagent run` (no
// --json) ends with the run's cost on its summary line when the ledger
// has prices (the cost its RUN_FINISHED carries), and with none without
// prices.
func TestTerminalRunShowsItsCost(t *testing.T) {
	cliUsageLLM(t)
	prices := filepath.Join(repoRoot, "docs", "prices.example.yaml")
	run := func(extra ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		args := append([]string{repoChain("assistant.json"), "--input", "What is a rule chain?", "--data", filepath.Join(t.TempDir(), "data")}, extra...)
		if err := runRun(context.Background(), args, nil, &out, &errb); err != nil {
			t.Fatalf("run %v: %v\n%s", extra, err, errb.String())
		}
		return out.String()
	}
	costs := runCosts(t, run("--prices", prices, "--json"))
	if len(costs) != 1 || !strings.HasSuffix(costs[0], " USD") || strings.HasPrefix(costs[0], " ") {
		t.Fatalf("the JSON run's cost: %q", costs)
	}
	lines := strings.Split(strings.TrimSpace(run("--prices", prices)), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "— ") || !strings.Contains(last, "tokens 41 in / 24 out") || !strings.HasSuffix(last, " · cost "+costs[0]) {
		t.Fatalf("the terminal view's last line %q, want it to end with the cost %s", last, costs[0])
	}
	lines = strings.Split(strings.TrimSpace(run()), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "— ") || strings.Contains(last, "cost") {
		t.Fatalf("without prices, the last line %q", last)
	}
}
