package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

func TestWithoutSecretArgs(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"ra", "serve", "--global", "api_key=sk-abc123456789", "--addr", "x"}, []string{"ra", "serve", "--addr", "x"}},
		{[]string{"ra", "run", "c", "--global=api_key=sk-abc123456789"}, []string{"ra", "run", "c"}},
		{[]string{"ra", "serve", "-global", "db_url=postgres://u:hunter2hunter2@h/db"}, []string{"ra", "serve"}},
		{[]string{"ra", "serve", "--token", "tok-0123456789", "--global", "model=gpt"}, []string{"ra", "serve", "--global", "model=gpt"}},
		{[]string{"ra", "serve", "--token=tok-0123456789"}, []string{"ra", "serve"}},
		{[]string{"ra", "run", "c", "--input", "--token is a word"}, []string{"ra", "run", "c", "--input", "--token is a word"}},
		{[]string{"ra", "run", "c", "--", "--token", "x"}, []string{"ra", "run", "c", "--", "--token", "x"}},
	} {
		got, removed := withoutSecretArgs(tc.in)
		if !slices.Equal(got, tc.want) || removed != !slices.Equal(tc.in, tc.want) {
			t.Errorf("%q: got %q (removed %v), want %q", tc.in, got, removed, tc.want)
		}
	}
}

// TestStderrIsScrubbed: the error line the CLI prints must not repeat an
// LLM key quoted in a provider's 401 message, a URL's password, or a
// secret the process was given.
func TestStderrIsScrubbed(t *testing.T) {
	const given = "given-secret-0123456789"
	args := []string{"--global", "api_key=" + given}
	for _, err := range []error{
		errors.New(`llm request failed: 401 Unauthorized: {"error":{"message":"Incorrect API key provided: sk-proj-abcdEFGH1234567890ijklMNOP"}}`),
		fmt.Errorf("connect to postgres://admin:hunter2hunter2@db.internal/app failed"),
		&exitError{code: 3, err: errors.New("the provider said: invalid key " + given)},
		usagef("bad value %s", given),
	} {
		var stderr bytes.Buffer
		exitCode(err, &stderr, cliScrubber(args))
		out := stderr.String()
		for _, secret := range []string{"sk-proj-abcdEFGH1234567890ijklMNOP", "hunter2hunter2", given} {
			if strings.Contains(out, secret) {
				t.Errorf("stderr shows %q:\n%s", secret, out)
			}
		}
		if !strings.Contains(out, "[REDACTED]") {
			t.Errorf("nothing was redacted in:\n%s", out)
		}
	}
}

// TestSecretArgsHiddenFromChildren builds the real binary, runs a chain
// whose agent has the bash tool with --global api_key=... on the command
// line, and has the scripted model ask bash to look for the key in
// /proc/<ruleagent>/cmdline. The command counts what it finds, so the
// effect is asserted without the secret ever being printed.
func TestSecretArgsHiddenFromChildren(t *testing.T) {
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("builds the binary; /proc/<pid>/cmdline is Linux's")
	}
	bin := filepath.Join(t.TempDir(), "ruleagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	const secret = "sk-argv0123456789abcdefSECRET"
	count := `{"command":"echo found $(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep -c argv0123456789) inputs $(tr '\\0' '\\n' < /proc/$PPID/cmdline | grep -c -- --input)"}`
	srv := llmtest.NewServer(t, llmtest.Sequence(llmtest.Calls(llmtest.Call("bash", count)), llmtest.Reply("done")))
	chain := filepath.Join(t.TempDir(), "probe.json")
	dsl := `{"ruleChain":{"id":"probe","name":"Probe","root":true},"metadata":{"firstNodeIndex":0,"nodes":[{"id":"a","type":"ai/agent","name":"A",
	"configuration":{"url":"${global.llm_url}","key":"${global.api_key}","model":"m","maxStep":3,
	"tools":[{"type":"builtin","name":"bash","config":{"workDir":"` + t.TempDir() + `","sandbox":"off"}}]}}],"connections":[]}}`
	if err := os.WriteFile(chain, []byte(dsl), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"", "1"} {
		cmd := exec.Command(bin, "run", chain, "--input", "go", "--allow-sandbox-off", "--global", "llm_url="+srv.URL, "--global", "api_key="+secret)
		cmd.Env = append(os.Environ(), "RULEAGENT_KEEP_ENV="+keep)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("keep=%q: %v\n%s", keep, err, out)
		}
		results := srv.LastRequest().ToolResults()
		if len(results) != 1 {
			t.Fatalf("keep=%q: want one tool result, got %+v", keep, results)
		}
		got := results[0].Content
		if !strings.Contains(got, "inputs 1") {
			t.Fatalf("keep=%q: the command did not read ruleagent's command line:\n%s", keep, got)
		}
		if keep == "" && !strings.Contains(got, "found 0") {
			t.Fatalf("the API key is visible in /proc/<ruleagent>/cmdline:\n%s", got)
		}
		if keep == "1" && !strings.Contains(got, "found 1") {
			t.Fatalf("RULEAGENT_KEEP_ENV=1 should skip the re-exec, so the test can see the difference:\n%s", got)
		}
		// The key still worked: the LLM received it.
		if auth := srv.LastRequest().Header.Get("Authorization"); auth != "Bearer "+secret {
			t.Fatalf("keep=%q: the LLM got %q", keep, auth)
		}
	}
}
