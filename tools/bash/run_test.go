package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

func call(t *testing.T, tool *Tool, args map[string]any) (tools.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(t.Context(), raw)
}

func mustRun(t *testing.T, tool *Tool, command string) tools.Result {
	t.Helper()
	res, err := call(t, tool, map[string]any{"command": command})
	if err != nil {
		t.Fatalf("%q: %v", command, err)
	}
	return res
}

// alive reports whether pid is a running process (a zombie counts as gone:
// in a container nobody may reap it).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRunOutputAndExitCode(t *testing.T) {
	tool := newTool(t, `{}`)
	res := mustRun(t, tool, "echo out; echo err >&2")
	if res.IsError || !strings.Contains(res.Text, "exit code: 0") || !strings.Contains(res.Text, "stdout:\nout\n") || !strings.Contains(res.Text, "stderr:\nerr\n") {
		t.Fatalf("unexpected result: %+v", res)
	}
	res = mustRun(t, tool, "echo partial; exit 3")
	if !res.IsError || !strings.Contains(res.Text, "exit code: 3") || !strings.Contains(res.Text, "partial") || !strings.Contains(res.Text, "stderr: (empty)") {
		t.Fatalf("non-zero exit should be a result marked as an error: %+v", res)
	}
	res = mustRun(t, tool, "cat; echo done")
	if !strings.Contains(res.Text, "stdout:\ndone\n") {
		t.Fatalf("stdin should be empty: %+v", res)
	}
}

func TestTimeoutKillsTheWholeProcessGroup(t *testing.T) {
	tool := newTool(t, `{"timeout":"400ms"}`)
	start := time.Now()
	_, err := call(t, tool, map[string]any{"command": "echo started; sleep 30 & echo $! > bg.pid; sleep 30"})
	if !errors.Is(err, tools.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("timeout took %s", time.Since(start))
	}
	if !strings.Contains(err.Error(), "started") {
		t.Fatalf("timeout error should carry the partial output: %v", err)
	}
	waitGone(t, readPID(t, filepath.Join(tool.ws.Dir(), "bg.pid")))
}

func TestCallTimeoutCanOnlyLower(t *testing.T) {
	tool := newTool(t, `{"timeout":"10s"}`)
	start := time.Now()
	_, err := call(t, tool, map[string]any{"command": "sleep 5", "timeout": 200})
	if !errors.Is(err, tools.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("a lower call timeout should apply: %v after %s", err, time.Since(start))
	}
	short := newTool(t, `{"timeout":300}`)
	start = time.Now()
	_, err = call(t, short, map[string]any{"command": "sleep 5", "timeout": 60000})
	if !errors.Is(err, tools.ErrTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("a higher call timeout must not raise the configured one: %v after %s", err, time.Since(start))
	}
}

func TestLeftoverProcessesAreKilledWhenTheCommandEnds(t *testing.T) {
	tool := newTool(t, `{}`)
	start := time.Now()
	res := mustRun(t, tool, "sleep 30 & echo $! > bg.pid; echo parent done")
	if !strings.Contains(res.Text, "parent done") || time.Since(start) > 3*time.Second {
		t.Fatalf("result %+v after %s", res, time.Since(start))
	}
	waitGone(t, readPID(t, filepath.Join(tool.ws.Dir(), "bg.pid")))
}

func TestContextCancelStopsPromptly(t *testing.T) {
	tool := newTool(t, `{"timeout":"30s"}`)
	// Start the sandbox helper first: its start-up is not what is timed.
	mustRun(t, tool, "true")
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := tool.Call(ctx, json.RawMessage(`{"command":"sleep 30 & echo $! > bg.pid; sleep 30"}`))
	if !errors.Is(err, context.Canceled) || errors.Is(err, tools.ErrTimeout) {
		t.Fatalf("want a cancellation error, got %v", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("cancel took %s", elapsed)
	}
	waitGone(t, readPID(t, filepath.Join(tool.ws.Dir(), "bg.pid")))
}

func TestEnvironmentIsAnAllowlist(t *testing.T) {
	const secret = "sk-test-0123456789abcdefghijklmnop"
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("LANG", "C.UTF-8")
	tool := newTool(t, `{"allowGroups":["env_read"],"env":{"EXTRA_SETTING":"configured"}}`)
	res := mustRun(t, tool, "env; echo key=$OPENAI_API_KEY")
	if strings.Contains(res.Text, secret) || strings.Contains(res.Text, "OPENAI_API_KEY=") {
		t.Fatalf("the command saw a secret from the agent's environment:\n%s", res.Text)
	}
	for _, want := range []string{"PATH=", "LANG=C.UTF-8", "EXTRA_SETTING=configured", "key=\n"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("environment lacks %q:\n%s", want, res.Text)
		}
	}
}

func TestNotALoginShell(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{".profile", ".bash_profile", ".bashrc", ".bash_login"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("export LOGIN_MARKER=leaked\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := os.Stat(shell); err != nil {
			continue
		}
		// Unconfined, so that HOME is the caller's (a confined command's
		// HOME is its private temporary directory).
		tool := newTool(t, `{"shellPath":"`+shell+`","sandbox":"off"}`)
		res := mustRun(t, tool, `echo "marker=[$LOGIN_MARKER] home=$HOME"`)
		if strings.Contains(res.Text, "leaked") || !strings.Contains(res.Text, "marker=[] home="+home) {
			t.Fatalf("%s read a start-up file or lost HOME:\n%s", shell, res.Text)
		}
	}
}

func TestWorkDir(t *testing.T) {
	tool := newTool(t, `{}`)
	sub := filepath.Join(tool.ws.Dir(), "sub", "dir")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tool.ws.Dir(), "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := call(t, tool, map[string]any{"command": "pwd", "work_dir": "sub/dir"})
	if err != nil || !strings.Contains(res.Text, "dir\n") {
		t.Fatalf("work_dir: %+v %v", res, err)
	}
	res, err = call(t, tool, map[string]any{"command": "pwd", "work_dir": sub})
	if err != nil || !strings.Contains(res.Text, "sub/dir\n") {
		t.Fatalf("absolute work_dir inside the workspace: %+v %v", res, err)
	}
	for _, bad := range []string{"..", "../..", "sub/../..", "/tmp", "/", "file"} {
		if _, err := call(t, tool, map[string]any{"command": "pwd", "work_dir": bad}); !errors.Is(err, tools.ErrInvalidPath) {
			t.Errorf("work_dir %q: want ErrInvalidPath, got %v", bad, err)
		}
	}
	if _, err := call(t, tool, map[string]any{"command": "pwd", "work_dir": "missing"}); !errors.Is(err, tools.ErrFileNotFound) {
		t.Errorf("missing work_dir: want ErrFileNotFound, got %v", err)
	}
}

func TestOutputIsCappedPerStream(t *testing.T) {
	tool := newTool(t, `{"maxOutputSize":100}`)
	res := mustRun(t, tool, `i=0; while [ $i -lt 500 ]; do printf x; i=$((i+1)); done; echo END; echo small >&2`)
	if !strings.Contains(res.Text, "bytes cut") || !strings.Contains(res.Text, "END") || !strings.Contains(res.Text, "stderr:\nsmall") {
		t.Fatalf("output not capped as expected:\n%s", res.Text)
	}
	if len(res.Text) > 400 {
		t.Fatalf("result is %d bytes", len(res.Text))
	}
}

func TestRefusedCommandsDoNotRun(t *testing.T) {
	tool := newTool(t, `{}`)
	_, err := call(t, tool, map[string]any{"command": "touch ran; printenv"})
	if !errors.Is(err, tools.ErrPolicyDenied) {
		t.Fatalf("want ErrPolicyDenied, got %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(tool.ws.Dir(), "ran")); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatal("part of a refused command ran")
	}
}
