package bash

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

func requireSandbox(t *testing.T) {
	t.Helper()
	if st := sandbox.Describe(); !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the sandbox tests, but: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
}

func callInRun(t *testing.T, tool *Tool, run, command string) tools.Result {
	t.Helper()
	ctx := tools.WithCall(context.Background(), &tools.CallInfo{RunID: run})
	raw, _ := json.Marshal(map[string]any{"command": command})
	res, err := tool.Call(ctx, raw)
	if err != nil {
		t.Fatalf("%s: %q: %v", run, command, err)
	}
	return res
}

// TestEachRunHasItsOwnTemporaryDirectory: a run's commands share $TMPDIR;
// another run's commands can neither read nor write it.
func TestEachRunHasItsOwnTemporaryDirectory(t *testing.T) {
	requireSandbox(t)
	tool := newTool(t, `{}`)
	res := callInRun(t, tool, "run-a", `cd "$TMPDIR" && echo private-a > note && pwd`)
	dirA := strings.TrimSpace(strings.SplitN(strings.SplitN(res.Text, "stdout:\n", 2)[1], "\n", 2)[0])
	if !filepath.IsAbs(dirA) {
		t.Fatalf("no directory in:\n%s", res.Text)
	}
	if res := callInRun(t, tool, "run-a", `cd "$TMPDIR" && cat note`); !strings.Contains(res.Text, "private-a") {
		t.Fatalf("the same run lost its file:\n%s", res.Text)
	}
	res = callInRun(t, tool, "run-b", "cat "+dirA+"/note; echo x > "+dirA+"/forged; ls "+dirA)
	if strings.Contains(res.Text, "private-a") || !strings.Contains(res.Text, "Permission denied") {
		t.Fatalf("another run reached run-a's directory:\n%s", res.Text)
	}
	if _, err := os.Stat(filepath.Join(dirA, "forged")); err == nil {
		t.Fatal("another run wrote into run-a's directory")
	}
}

func TestSandboxConfig(t *testing.T) {
	for _, c := range []struct{ config, field string }{
		{`{"sandbox":"sometimes"}`, "sandbox"},
		{`{"network":"wifi"}`, "network"},
		{`{"connect":["nohost"]}`, "network"},
		{`{"sandboxRead":["relative"]}`, "sandboxRead[0]"},
		{`{"sandboxWrite":["/ok","rel"]}`, "sandboxWrite[1]"},
		{`{"interpreters":"maybe"}`, "interpreters"},
	} {
		_, err := New(tools.BuildContext{WorkDir: t.TempDir()}, json.RawMessage(c.config))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: want an error naming %s, got %v", c.config, c.field, err)
		}
	}
	off := newTool(t, `{"sandbox":"off"}`)
	if !strings.Contains(off.Info().Description, "not confined") {
		t.Errorf("description: %s", off.Info().Description)
	}
	on := newTool(t, `{}`)
	want := "not confined"
	if sandbox.Describe().Available {
		want = "confined by Landlock"
	}
	if !strings.Contains(on.Info().Description, want) {
		t.Errorf("description should say %q: %s", want, on.Info().Description)
	}
}

// TestExecAllowlistFollowsThePolicy: the programs a confined command may
// run are the ones the policy would let it name.
func TestExecAllowlistFollowsThePolicy(t *testing.T) {
	deny := testPolicy(t, Config{Deny: []string{"curl"}})
	for name, want := range map[string]bool{"ls": true, "git": true, "awk": true, "curl": false, "shred": false, "mkfs.ext4": false,
		"python3": false, "perl": false, "make": false, "sudo": false, "gdb": false, "socat": false, "printenv": false} {
		if got := deny.execAllowed(name); got != want {
			t.Errorf("deny mode: execAllowed(%s) = %v", name, got)
		}
	}
	if !testPolicy(t, Config{Interpreters: interpretersOn}).execAllowed("python3") {
		t.Error("with interpreters on, python3 may run")
	}
	allow := testPolicy(t, Config{Mode: modeAllow, Allow: []string{"ls", "python3"}})
	for name, want := range map[string]bool{"ls": true, "python3": true, "cat": false, "sh": false} {
		if got := allow.execAllowed(name); got != want {
			t.Errorf("allow mode: execAllowed(%s) = %v", name, got)
		}
	}
}

// TestWithoutLandlock plays a kernel without Landlock: required refuses
// to run anything, naming the requirement; best-effort runs unconfined;
// off runs unconfined. The marker shows whether the command ran.
func TestWithoutLandlock(t *testing.T) {
	orig := sandboxStatus
	t.Cleanup(func() { sandboxStatus = orig })
	sandboxStatus = func() sandbox.Status {
		return sandbox.Status{Reason: "the kernel has no Landlock (test)", DefaultMode: sandbox.BestEffort}
	}
	for _, mode := range []string{"required", "best-effort", "off"} {
		tool := newTool(t, `{"sandbox":"`+mode+`"}`)
		marker := filepath.Join(tool.ws.Dir(), "ran")
		raw, _ := json.Marshal(map[string]any{"command": "touch " + marker})
		_, err := tool.Call(context.Background(), raw)
		_, statErr := os.Stat(marker)
		switch mode {
		case "required":
			if !errors.Is(err, tools.ErrExecutionFailed) || !strings.Contains(err.Error(), "Landlock") || statErr == nil {
				t.Errorf("required: want a refusal naming the kernel requirement and nothing run, got %v (ran: %v)", err, statErr == nil)
			}
			if !strings.Contains(tool.Info().Description, "required but unavailable") {
				t.Errorf("required: description %q", tool.Info().Description)
			}
		default:
			if err != nil || statErr != nil {
				t.Errorf("%s: want the command run unconfined, got %v (ran: %v)", mode, err, statErr == nil)
			}
		}
	}
}

// TestUnconfinedAndConfinedRunAlike: exit codes, both streams, the
// timeout's group kill and the kill of leftovers behave the same with and
// without the sandbox.
func TestUnconfinedAndConfinedRunAlike(t *testing.T) {
	modes := []string{"off"}
	if sandbox.Describe().Available {
		modes = append(modes, "required")
	}
	for _, mode := range modes {
		tool := newTool(t, `{"sandbox":"`+mode+`"}`)
		res := mustRun(t, tool, "echo out; echo err >&2; exit 3")
		if !res.IsError || !strings.Contains(res.Text, "exit code: 3") || !strings.Contains(res.Text, "stdout:\nout") || !strings.Contains(res.Text, "stderr:\nerr") {
			t.Errorf("%s: %s", mode, res.Text)
		}
		start := time.Now()
		raw, _ := json.Marshal(map[string]any{"command": "sleep 30 & sleep 30", "timeout": 200})
		if _, err := tool.Call(context.Background(), raw); !errors.Is(err, tools.ErrTimeout) || time.Since(start) > 10*time.Second {
			t.Errorf("%s: timeout: %v after %s", mode, err, time.Since(start))
		}
		start = time.Now()
		if res := mustRun(t, tool, "sleep 30 & echo started"); !strings.Contains(res.Text, "started") || time.Since(start) > 10*time.Second {
			t.Errorf("%s: a leftover process held the call for %s: %s", mode, time.Since(start), res.Text)
		}
	}
}
