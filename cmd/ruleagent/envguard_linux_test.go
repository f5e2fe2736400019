package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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

// TestUnprivilegedServerGetsNamespaces: ruleagent run by a user other
// than root (nobody), non-dumpable as it makes itself, still gets its
// commands the mount and network namespaces where the kernel allows
// unprivileged user namespaces: version says so, and a confined command
// cannot read the edit tool's backups nor reach the network.
func TestUnprivilegedServerGetsNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if st := sandbox.Describe(); !st.Available {
		t.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("this system forbids user namespaces")
	}
	dir, err := os.MkdirTemp("", "ruleagent-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ruleagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, "ws")
	backup := filepath.Join(ws, ".ruleagent", "backups", "s1", "notes.txt.v1")
	if err := os.MkdirAll(filepath.Dir(backup), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backup, []byte("BACKUP-SECRET-CONTENT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(ws, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	asNobody := func(args ...string) string {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := asNobody("version"); !strings.Contains(out, "mount and network namespaces (in a user namespace)") {
		t.Fatalf("as nobody, version reports no namespaces:\n%s", out)
	}
	out := asNobody("tools", "call", "bash", "--workspace", ws, "--config", `{"sandbox":"required"}`, "--args",
		`{"command":"grep -r BACKUP-SECRET . ; echo end"}`)
	if !strings.Contains(out, "end") || strings.Contains(out, "BACKUP-SECRET-CONTENT") {
		t.Fatalf("as nobody, a confined command read the edit tool's backups:\n%s", out)
	}
}
