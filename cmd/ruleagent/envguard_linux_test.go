package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
		cmd := exec.Command(bin, "tools", "call", "bash", "--workspace", t.TempDir(), "--config", `{"allowGroups":["env_read"]}`, "--args", read)
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
