package main

import (
	"bytes"
	"context"
	"net"
	"os"
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

func TestRunRefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	setLLM(t, "http://"+addr+"/v1")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi", "--global", "unused=1"}, nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "connection refused") || !strings.Contains(errb.String(), "is the LLM server at") {
		t.Fatalf("exit %d, stderr: %s", code, errb.String())
	}
}

func TestRunNoLLMConfigured(t *testing.T) {
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("assistant.json"), "--input", "hi"}, nil, &out, &errb)
	for _, want := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL"} {
		if code == 0 || !strings.Contains(errb.String(), want) {
			t.Fatalf("exit %d, stderr does not name %s: %s", code, want, errb.String())
		}
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
