package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// The two specialists of chains/orchestrator.json answer in several lines,
// chunk by chunk, slowly enough that their streams overlap.
const (
	reviewText  = "Bug: the loop skips the last element.\nFix: loop while i < n.\nOtherwise the change looks right."
	summaryText = "- Adds a retry loop\n- Fixes the timeout\n- Renames the config field"
)

func orchestratorLLM(t *testing.T, delay time.Duration) *llmtest.Server {
	return llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("careful code reviewer"), Script: llmtest.Always(llmtest.Response{Text: reviewText, ChunkSize: 3, ChunkDelay: delay})},
		llmtest.Rule{Match: llmtest.SystemContains("You summarize texts"), Script: llmtest.Always(llmtest.Response{Text: summaryText, ChunkSize: 3, ChunkDelay: delay})},
		llmtest.Rule{Match: llmtest.SystemContains("You lead a small team"), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("Code_Reviewer", `{"message":"Review: for i := 0; i < n-1; i++ {}"}`), llmtest.Call("Summarizer", `{"message":"Summarize the change notes."}`)),
			llmtest.Reply("Review found one bug; summary attached."),
		)},
	))
}

// TestRunParallelSubAgentsNeverShareALine runs chains/orchestrator.json,
// whose two sub-agents stream at the same time (their chunks alternate
// every few milliseconds): each line of the transcript is one
// sub-agent's, and each sub-agent's lines, read under its name, are its
// answer exactly.
func TestRunParallelSubAgentsNeverShareALine(t *testing.T) {
	srv := orchestratorLLM(t, 4*time.Millisecond)
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("orchestrator.json"), "--input", "Review and summarize my change."}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	said := map[string][]string{}
	author, width := "", 0
	for _, l := range strings.Split(out.String(), "\n") {
		body, ok := strings.CutPrefix(l, "    ")
		if !ok || strings.HasPrefix(body, "↳ ") {
			author = ""
			continue
		}
		if name, text, tagged := strings.Cut(body, " ▸ "); tagged && (name == "Code Reviewer" || name == "Summarizer") {
			author, width = name, len([]rune(name))+3
			said[name] = append(said[name], text)
			continue
		}
		if author == "" || !strings.HasPrefix(body, strings.Repeat(" ", width)) {
			t.Fatalf("a sub-agent's line without its author:\n%q\nin:\n%s", l, out.String())
		}
		said[author] = append(said[author], body[width:])
	}
	if got := strings.Join(said["Code Reviewer"], "\n"); got != reviewText {
		t.Fatalf("Code Reviewer's lines:\n%s\nin:\n%s", got, out.String())
	}
	if got := strings.Join(said["Summarizer"], "\n"); got != summaryText {
		t.Fatalf("Summarizer's lines:\n%s\nin:\n%s", got, out.String())
	}
}

// TestRunPrintsAChainsResult: a chain that is not an agent streams no
// text; its result (the final message's data, JSON indented) and relation
// are printed, and --show-meta adds its metadata.
func TestRunPrintsAChainsResult(t *testing.T) {
	setLLM(t, "http://127.0.0.1:1/v1") // the chain calls no LLM
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("order-status.json"), "--input", `{"orderId":"A-1001","userId":"alice"}`, "--show-meta"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "{\n  \"carrier\": \"DHL\",\n  \"eta\": \"2026-11-25\",\n  \"found\": true,\n  \"orderId\": \"A-1001\",\n  \"status\": \"shipped\"\n}\n— relation Success\n— metadata {"
	// After the chain's steps (TestRunShowsTheChainsSteps).
	result := regexp.MustCompile(`(?m)^· .*\n`).ReplaceAllString(out.String(), "")
	if !strings.HasPrefix(result, want) || !strings.Contains(out.String(), `"runId":"run-`) {
		t.Fatalf("output:\n%s\nwant it to start with:\n%s", out.String(), want)
	}
	// The answer an agent streamed is not printed a second time.
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("Only once.")))
	setLLM(t, srv.URL)
	out.Reset()
	if code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi"}, nil, &out, &errb); code != 0 || strings.Count(out.String(), "Only once.") != 1 || strings.Contains(out.String(), "relation") {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
}

// TestRunShowsTheChainsSteps: the nodes of the run's own chain are shown
// as they tell their result, as the editor's trace shows them: name,
// relation, duration, and a failed node's error; agent nodes are not
// (their text and tool calls are), nor the nodes of a chain tool beyond
// the step lines under its call. --json prints none: they are no events.
func TestRunShowsTheChainsSteps(t *testing.T) {
	setLLM(t, "http://127.0.0.1:1/v1") // the chains call no LLM
	step := regexp.MustCompile(`\((<1ms|\d+ms)\)`)
	for _, tc := range []struct {
		chain, input string
		want         []string
	}{
		{repoChain("order-status.json"), `{"orderId":"A-1001","userId":"alice"}`, []string{"· Check the order id → True (D)", "· Find the order → Success (D)", "{"}},
		{repoChain("order-status.json"), `{"orderId":"nope","userId":"alice"}`, []string{"· Check the order id → False (D)", "· Explain a malformed id → Success (D)", "{"}},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"run", tc.chain, "--input", tc.input}, nil, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		got := strings.Split(step.ReplaceAllString(out.String(), "(D)"), "\n")
		if len(got) < len(tc.want) || strings.Join(got[:len(tc.want)], "\n") != strings.Join(tc.want, "\n") {
			t.Fatalf("%s:\n%s\nwant it to start with:\n%s", tc.input, out.String(), strings.Join(tc.want, "\n"))
		}
		out.Reset()
		if code := run(context.Background(), []string{"run", tc.chain, "--input", tc.input, "--json"}, nil, &out, &errb); code != 0 || strings.Contains(out.String(), "Check the order id") {
			t.Fatalf("--json: exit %d:\n%s", code, out.String())
		}
	}

	// A node that fails: its error, and the run's.
	dir := t.TempDir()
	failing := `{"ruleChain": {"id": "failing", "name": "Failing"}, "metadata": {"nodes": [
	  {"id": "ok", "type": "jsTransform", "name": "Tag it", "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}},
	  {"id": "boom", "type": "jsTransform", "name": "Break", "configuration": {"jsScript": "throw new Error('no stock for ' + msg.sku);"}}],
	  "connections": [{"fromId": "ok", "toId": "boom", "type": "Success"}]}}`
	if err := os.WriteFile(filepath.Join(dir, "failing.json"), []byte(failing), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", filepath.Join(dir, "failing.json"), "--input", `{"sku":"X-1"}`}, nil, &out, &errb)
	lines := strings.Split(step.ReplaceAllString(out.String(), "(D)"), "\n")
	if code == 0 || len(lines) < 2 || lines[0] != "· Tag it → Success (D)" || !strings.HasPrefix(lines[1], "✗ Break → Failure (D): ") || !strings.Contains(lines[1], "no stock for X-1") {
		t.Fatalf("exit %d:\n%s\nstderr: %s", code, out.String(), errb.String())
	}
}

// TestRunRetryIsANote: an LLM retry is one human line on stderr, not JSON
// in the transcript.
func TestRunRetryIsANote(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Flaky(1, 429, llmtest.Always(llmtest.Reply("Hello, again."))))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "retry") || strings.Contains(out.String(), "{") || !strings.HasPrefix(out.String(), "Hello, again.\n") {
		t.Fatalf("the retry is in the transcript:\n%s", out.String())
	}
	note := regexp.MustCompile(`(?m)^ruleagent: retrying the LLM call in \d+(\.\d+)?m?s \(retry 1\): LLM http://127\.0\.0\.1:\d+/v1 \(model test-model\) answered 429: llmtest: scripted failure 1 of 1 for this conversation$`)
	if lines := strings.Count(errb.String(), "retrying"); !note.MatchString(errb.String()) || lines != 1 {
		t.Fatalf("stderr (%d lines):\n%s", lines, errb.String())
	}
}

// TestRunLogsAreNotes: what the chains folder logs while it loads (here:
// a chain file with a misspelt key) is one human line on stderr, before
// the transcript, without a timestamp; the run's own log line is not
// printed (the usage line says it). Which chains MCP would offer is not
// said: run serves no MCP (order-status, whose userId support-agent
// binds, is withheld from MCP clients by serve and mcp --stdio, which say
// so).
func TestRunLogsAreNotes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("Hi.")))
	setLLM(t, srv.URL)
	dir := copyChains(t)
	if err := os.WriteFile(filepath.Join(dir, "chains", "zz-typo.json"), []byte(`{"ruleChain": {"id": "typo", "name": "Typo"},
  "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "nmae": "Tag",
    "configuration": {"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", "assistant", "--chains", filepath.Join(dir, "chains"), "--input", "hi"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := "ruleagent: warning: chain file loads with a warning (file=" + filepath.Join(dir, "chains", "zz-typo.json") +
		` path=metadata.nodes[0].nmae warning=unknown key, ignored by RuleGo (did you mean "name"?))` + "\n"
	if errb.String() != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", errb.String(), want)
	}
	if !strings.HasPrefix(out.String(), "Hi.\n") || strings.Contains(out.String(), "mcp") {
		t.Fatalf("stdout:\n%s", out.String())
	}
}

// TestRunCancelledByTheUser: Ctrl+C (the command's context ended by
// SIGINT) cancels the run, says so, and exits 130, as a shell expects;
// SIGTERM exits 143.
func TestRunCancelledByTheUser(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Hang: true}))
	setLLM(t, srv.URL)
	for _, tc := range []struct {
		sig  os.Signal
		code int
		says string
	}{
		{os.Interrupt, 130, "the run was cancelled by the user (Ctrl+C)"},
		{syscall.SIGTERM, 143, "the run was stopped (SIGTERM)"},
	} {
		before := len(srv.Requests())
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(300*time.Millisecond, func() { cancel(&interrupted{sig: tc.sig}) })
		var out, errb bytes.Buffer
		code := run(ctx, []string{"run", repoChain("assistant.json"), "--input", "hi"}, nil, &out, &errb)
		if code != tc.code || !strings.HasSuffix("\n"+errb.String(), "\nruleagent: "+tc.says+"\n") || strings.Contains(errb.String(), "went away") {
			t.Fatalf("%v: exit %d, stderr:\n%s", tc.sig, code, errb.String())
		}
		if reqs := srv.Requests(); len(reqs) != before+1 || !reqs[before].Aborted() {
			t.Fatalf("%v: the LLM call was not cancelled: %d requests", tc.sig, len(reqs)-before)
		}
	}
}
