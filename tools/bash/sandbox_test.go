package bash

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
