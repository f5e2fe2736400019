package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// repoChain is the path of an example chain from this package's directory.
func repoChain(name string) string { return filepath.Join("..", "..", "chains", name) }

func setLLM(t *testing.T, url string) {
	t.Setenv("OPENAI_BASE_URL", url)
	t.Setenv("OPENAI_API_KEY", "sk-test-cli-key-0001")
	t.Setenv("OPENAI_MODEL", "test-model")
}

func TestRunAssistantStreams(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "Hi! How can I help you today?"}))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi"}, strings.NewReader(""), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Hi! How can I help you today?") || !strings.Contains(out.String(), "model test-model") ||
		!strings.Contains(out.String(), "tokens") {
		t.Fatalf("output:\n%s", out.String())
	}
	if got := srv.LastRequest().LastUserText(); got != "hi" {
		t.Fatalf("sent %q", got)
	}
}

func TestRunJSONEvents(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("Structured hello.")))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", "assistant", "--chains", filepath.Join("..", "..", "chains"), "--input", "hi", "--json"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if v := aguicheck.CheckJSONL(&out); v != nil {
		t.Fatalf("violations: %v", v)
	}
}

func TestRunStdinInput(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response { return llmtest.Reply("echo: " + r.LastUserText()) }))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "-"}, strings.NewReader("from stdin\n"), &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "echo: from stdin") {
		t.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// The address refuses connections for the whole test: a neighbour (another
// test's scripted LLM, in this process or another) that tries to take it
// fails, where a port merely freed could be given to it, which then
// answered the run (exit 0: the test failed once in a full package run).
func TestRunRefusedConnection(t *testing.T) {
	addr := refusingAddr(t)
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Fatalf("another server could take %s, where the run must find nothing listening", addr)
	}
	setLLM(t, "http://"+addr+"/v1")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi", "--global", "unused=1"}, nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "connection refused") || !strings.Contains(errb.String(), "is the LLM server at") {
		t.Fatalf("exit %d, stderr: %s", code, errb.String())
	}
}

// With no LLM, run uses the built-in demo model and says so on stderr:
// the support agent calls its business chain and reports its result.
func TestRunNoLLMConfigured(t *testing.T) {
	noLLM(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("support-agent.json"), "--meta", "userId=alice", "--input", "Where is my order A-1001?"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"[demo model] Calling get_order_status", `→ get_order_status {"orderId":"A-1001"}`, "✓ get_order_status",
		"[demo model] get_order_status answered: carrier DHL, eta 2026-11-25, found true, orderId A-1001, status shipped.", "model ruleagent-demo", "2 steps"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "built-in demo model") || !strings.Contains(errb.String(), "OPENAI_BASE_URL") {
		t.Fatalf("stderr: %s", errb.String())
	}
	// A chain of plain nodes asks no model: nothing is said about one.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"run", repoChain("order-status.json"), "--input", `{"orderId":"A-1001","userId":"alice"}`}, nil, &out, &errb); code != 0 || errb.Len() != 0 {
		t.Fatalf("order-status: exit %d, stderr: %s", code, errb.String())
	}
}

func TestUsageErrorsAndVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"run"}, nil, &out, &errb); code != exitUsage {
		t.Fatalf("run without chain: exit %d", code)
	}
	if code := run(context.Background(), []string{"nope"}, nil, &out, &errb); code != exitUsage {
		t.Fatalf("unknown command: exit %d", code)
	}
	out.Reset()
	if code := run(context.Background(), []string{"version"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "ruleagent ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
}

func TestGlobals(t *testing.T) {
	g := globals([]string{"OPENAI_BASE_URL=http://a", "OPENAI_MODEL=m", "RULEAGENT_GLOBAL_MODEL=m2", "RULEAGENT_GLOBAL_ROOT_DIR=/x"}, []string{"model=m3"})
	if g["llm_url"] != "http://a" || g["model"] != "m3" || g["root_dir"] != "/x" {
		t.Fatalf("%v", g)
	}
}

func TestUseDemoModel(t *testing.T) {
	tests := []struct {
		in       map[string]string
		demo     bool
		url, mod string
	}{
		{map[string]string{}, true, "http://demo.ruleagent.invalid/v1", "ruleagent-demo"},
		{map[string]string{"api_key": "sk-x", "llm_url": " "}, true, "http://demo.ruleagent.invalid/v1", "ruleagent-demo"},
		{map[string]string{"llm_url": "http://127.0.0.1:11434/v1"}, false, "http://127.0.0.1:11434/v1", ""},
		{map[string]string{"model": "gpt-4o-mini"}, false, "", "gpt-4o-mini"},
		{map[string]string{"llm_url": "http://demo.ruleagent.invalid/v1", "model": "x"}, true, "http://demo.ruleagent.invalid/v1", "x"},
	}
	for _, tt := range tests {
		g := tt.in
		if got := useDemoModel(g); got != tt.demo || g["llm_url"] != tt.url || g["model"] != tt.mod {
			t.Errorf("%v: demo %v, globals %v", tt.in, got, g)
		}
	}
}
