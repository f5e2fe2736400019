package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// TestSecretsHiddenFromChildren builds the real binary and has the bash
// tool read the environment block of its parent (ruleagent itself) from
// /proc: the secret must not be there, an ordinary variable must.
func TestSecretsHiddenFromChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "ruleagent")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	read := `{"command":"tr \"\\0\" \"\\n\" < /proc/$PPID/environ"}`
	for _, keep := range []string{"", "1"} {
		cmd := exec.Command(bin, "tools", "call", "bash", "--workspace", t.TempDir(), "--config", `{"allowGroups":["env_read"],"sandbox":"off"}`, "--args", read)
		cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-hidden-0123456789abcdefXYZ", "SERVICE_PASSWORD=pw-0123456789", "PLAIN_MARKER=visible", "RULEAGENT_KEEP_ENV="+keep)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("keep=%q: %v\n%s", keep, err, out)
		}
		s := string(out)
		if !strings.Contains(s, "PLAIN_MARKER=visible") {
			t.Fatalf("keep=%q: the command did not read the parent's environment:\n%s", keep, s)
		}
		hidden := !strings.Contains(s, "OPENAI_API_KEY=") && !strings.Contains(s, "SERVICE_PASSWORD=")
		if keep == "" && !hidden {
			t.Fatalf("secret variables visible in /proc/<ruleagent>/environ:\n%s", s)
		}
		if keep == "1" && hidden {
			t.Fatalf("RULEAGENT_KEEP_ENV=1 should skip the re-exec (the test must be able to see the difference):\n%s", s)
		}
		if strings.Contains(s, "sk-hidden-0123456789abcdefXYZ") {
			t.Fatalf("keep=%q: a secret value reached the output unscrubbed:\n%s", keep, s)
		}
	}
}

// TestSandboxHidesTheServersProcess: a confined command cannot read the
// environment of the ruleagent process (its grandparent, through the
// sandbox helper), even when the environment guard is off and the secret
// is there; the helper's own environment is out of reach too.
func TestSandboxHidesTheServersProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if st := sandbox.Describe(); !st.Available {
		t.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	bin := filepath.Join(t.TempDir(), "ruleagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	probe := `{"command":"S=$(cut -d' ' -f4 /proc/$PPID/stat); echo server-cmdline $(tr '\\0' '\\n' < /proc/$S/cmdline | grep -c -x -- --args); cat /proc/$S/environ > /dev/null 2>&1 && echo server-environ-readable; cat /proc/$PPID/environ > /dev/null 2>&1 && echo helper-environ-readable; grep -c -s sk-hidden /proc/$S/environ; echo end"}`
	cmd := exec.Command(bin, "tools", "call", "bash", "--workspace", t.TempDir(), "--config", `{"allowGroups":["env_read"]}`, "--args", probe)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-hidden-0123456789abcdefXYZ", "RULEAGENT_KEEP_ENV=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "server-cmdline 1") || !strings.Contains(s, "end") {
		t.Fatalf("the probe did not find the server process:\n%s", s)
	}
	if strings.Contains(s, "environ-readable") || strings.Contains(s, "sk-hidden") {
		t.Fatalf("a confined command read a process environment outside its sandbox:\n%s", s)
	}
}
