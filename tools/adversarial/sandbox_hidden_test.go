package adversarial_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/internal/testhooks"
	"golang.org/x/sys/unix"
)

// A denyArgs path is unreadable by the kernel, not only refused by the
// parser when a command names it: commands that read it without naming it
// (grep -r, tar of its folder, a glob, find -exec) get nothing. Inside the
// workspace that takes a mount namespace (the path is covered); in a
// read-only tree (sandboxRead, /etc) Landlock grants the tree around it,
// with or without namespaces.

func TestKernelHidesDenyArgsPaths(t *testing.T) {
	st := requireSandbox(t)
	f := newSandboxFixture(t)
	for _, p := range []string{filepath.Join(f.ws, "secret.txt"), filepath.Join(f.ws, "private", "key.pem")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(deniedSecret+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := map[string]any{"workDir": f.ws, "denyArgs": []string{"secret.txt", "private/", f.canary, "--no-verify"},
		"sandboxRead": []string{f.outside}}
	// What reads the whole workspace or the outside tree without naming
	// the denied paths.
	inWorkspace := []string{
		"grep -r TOPSECRET . ; echo end",
		"tar cf - . 2>/dev/null | tar xOf - 2>/dev/null; echo end",
		"cat * */* 2>&1; echo end",
		"find . -type f -exec cat {} + 2>&1; echo end",
		"cp -r . \"$TMPDIR/copy\" 2>&1; cat \"$TMPDIR\"/copy/* \"$TMPDIR\"/copy/*/* 2>&1; echo end",
	}
	outside := []string{
		"grep -r SECRET " + f.outside + " ; echo end",
		"cat " + f.outside + "/* ; echo end",
		"tar cf - -C " + f.outside + " . 2>/dev/null | tar xOf - ; echo end",
	}
	cases := outside
	if st.Namespaces {
		cases = append(cases, inWorkspace...)
	} else {
		t.Logf("no namespaces here (%s): only the denied path outside the workspace is checked", st.Reason)
	}
	for _, policyOff := range []bool{true, false} {
		tool := newBashTool(t, clone(config))
		if policyOff {
			testhooks.DisableBashPolicy(t, tool)
		}
		for _, cmd := range cases {
			raw, _ := json.Marshal(map[string]any{"command": cmd})
			res, err := tool.Call(t.Context(), raw)
			text := res.Text
			if err != nil {
				text = err.Error()
			}
			if strings.Contains(text, deniedSecret) || strings.Contains(text, outsideSecret) {
				t.Errorf("policy off=%v: %q read a denyArgs path:\n%s", policyOff, cmd, text)
			}
			if policyOff && !strings.Contains(text, "end") {
				t.Errorf("policy off=%v: %q did not run:\n%s", policyOff, cmd, text)
			}
		}
	}
	// The rest of the workspace and of the outside tree is still there.
	tool := newBashTool(t, clone(config))
	raw, _ := json.Marshal(map[string]any{"command": "cat data.txt; ls " + f.outside})
	if res, err := tool.Call(t.Context(), raw); err != nil || !strings.Contains(res.Text, "line one") || !strings.Contains(res.Text, "canary.txt") {
		t.Fatalf("the workspace or the outside tree became unreadable: %v %s", err, res.Text)
	}
}

// userNamespacesForbidden reports whether a system setting forbids
// unprivileged user namespaces here.
func userNamespacesForbidden() bool {
	for _, s := range []struct{ file, forbidden string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(s.file); err == nil && strings.TrimSpace(string(b)) == s.forbidden {
			return true
		}
	}
	return false
}

// unprivilegedEnv marks the re-executed test binary of
// TestKernelAsUnprivilegedUser.
const unprivilegedEnv = "RULEAGENT_ADVERSARIAL_UNPRIVILEGED"

func TestMain(m *testing.M) {
	if os.Getenv(unprivilegedEnv) == "1" {
		// As the ruleagent server makes itself.
		_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	os.Exit(m.Run())
}

// TestKernelAsUnprivilegedUser runs every kernel test again as the user
// nobody, non-dumpable, as a server that is not root runs: its commands
// get the namespaces a root server's get (inside a user namespace) where
// the system allows unprivileged user namespaces, and the same guarantees.
func TestKernelAsUnprivilegedUser(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("already not root: the kernel tests ran as this user")
	}
	dir, err := os.MkdirTemp("", "adversarial-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "adversarial.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^TestKernel", "-test.skip", "^TestKernelAsUnprivilegedUser$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dir, "HOME=" + dir, "CI=" + os.Getenv("CI"), unprivilegedEnv + "=1"}
	if _, err := exec.LookPath("perl"); err == nil {
		cmd.Env = append(cmd.Env, libraryProgramEnv+"="+plantLibraryProgram(t))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("--- FAIL")) || !bytes.Contains(out, []byte("--- PASS")) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	// Each test that needs namespaces must have had them, unless the
	// system forbids unprivileged user namespaces.
	if bytes.Contains(out, []byte("no namespaces here")) && !userNamespacesForbidden() {
		t.Fatalf("as nobody, the commands got no namespaces:\n%s", out)
	}
	t.Logf("as nobody:\n%s", out)
}

// libraryProgramEnv passes the program TestKernelAsUnprivilegedUser
// planted (as root) to the kernel tests it runs as nobody.
const libraryProgramEnv = "RULEAGENT_ADVERSARIAL_LIBRARY_PROGRAM"

// libraryProgram returns an interpreter (a copy of perl) lying in a
// directory of /usr/lib, as a JVM or a bundled Python lies there: planted
// for this test when root, or by the root test that re-ran this one as
// nobody.
func libraryProgram(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(libraryProgramEnv); p != "" {
		return p
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a program under /usr/lib")
	}
	return plantLibraryProgram(t)
}

func plantLibraryProgram(t *testing.T) string {
	t.Helper()
	src, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed")
	}
	dir, err := os.MkdirTemp("/usr/lib", "ruleagent-adversarial-")
	if err != nil {
		t.Skipf("cannot write /usr/lib: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(src)
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "perl"), b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "perl")
}

// TestKernelStopsLibraryTreePrograms: with interpreters off, an
// interpreter that lies under a readable library tree does not run:
// not through the dynamic loader, not through a symlink or a copy made in
// the workspace by an earlier call.
func TestKernelStopsLibraryTreePrograms(t *testing.T) {
	requireSandbox(t)
	prog := libraryProgram(t)
	f := newSandboxFixture(t)
	tool := newBashTool(t, map[string]any{"workDir": f.ws})
	testhooks.DisableBashPolicy(t, tool)
	// An earlier call links and copies it into the workspace.
	raw, _ := json.Marshal(map[string]any{"command": "ln -s " + prog + " ./p; cp " + prog + " ./pc; ls -l"})
	if _, err := tool.Call(t.Context(), raw); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(f.ws, "p")); err != nil {
		t.Fatalf("the symlink was not made, so this proves nothing: %v", err)
	}
	f.kernelOnly(t, map[string]any{}, []kernelCase{
		{"/lib64/ld-linux-x86-64.so.2 " + prog + ` -e 'open(F, ">WSMARKER")'`, "interpreters"},
		{prog + ` -e 'open(F, ">WSMARKER")'`, "interpreters"},
	})
	// What an earlier call left in the workspace the policy cannot know
	// (it lets these run): only the kernel stops them.
	on := newBashTool(t, map[string]any{"workDir": f.ws})
	for _, cmd := range []string{`./p -e 'open(F, ">WSMARKER")'`, `/lib64/ld-linux-x86-64.so.2 ./p -e 'open(F, ">WSMARKER")'`,
		`/lib64/ld-linux-x86-64.so.2 ./pc -e 'open(F, ">WSMARKER")'`} {
		cmd = f.expand(cmd)
		for _, tl := range []tools.Tool{tool, on} {
			raw, _ := json.Marshal(map[string]any{"command": cmd})
			res, _ := tl.Call(t.Context(), raw)
			if _, err := os.Stat(f.wsMarker); err == nil {
				t.Fatalf("%q: the interpreter under /usr/lib ran from the workspace:\n%s", cmd, res.Text)
			}
		}
	}
}
