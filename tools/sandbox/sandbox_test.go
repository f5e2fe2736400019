package sandbox

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseModeAndNetwork(t *testing.T) {
	for _, s := range []string{"required", "best-effort", "off"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if m, err := ParseMode(""); err != nil || m != DefaultMode() {
		t.Errorf("ParseMode(\"\") = %q, %v; want the default", m, err)
	}
	if _, err := ParseMode("on"); err == nil {
		t.Error("ParseMode(on) should fail")
	}
	ports, err := ParseNetwork("off", []string{"localhost:5432", "[::1]:8080", "db:5432"})
	if err != nil || len(ports) != 2 || ports[0] != 5432 || ports[1] != 8080 {
		t.Errorf("ParseNetwork = %v, %v", ports, err)
	}
	for _, bad := range [][]string{{"nohost"}, {"h:0"}, {"h:70000"}, {"h:x"}} {
		if _, err := ParseNetwork("off", bad); err == nil {
			t.Errorf("ParseNetwork(%q) should fail", bad)
		}
	}
	if _, err := ParseNetwork("internet", nil); err == nil {
		t.Error("an unknown network setting should fail")
	}
}

func TestDescribe(t *testing.T) {
	st := Describe()
	if st.DefaultMode != BestEffort {
		t.Errorf("default mode %q", st.DefaultMode)
	}
	if st.Available != (st.LandlockABI > 0) || (!st.Available && st.Reason == "") {
		t.Errorf("inconsistent status %+v", st)
	}
	if !strings.Contains(Summary(), string(st.DefaultMode)) {
		t.Errorf("summary %q", Summary())
	}
}

func requireLandlock(t *testing.T) Status {
	t.Helper()
	st := Describe()
	if !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run the sandbox tests, but: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine processes here: %s", st.Reason)
	}
	return st
}

func testSpec(t *testing.T) Spec {
	return Spec{Workspace: t.TempDir(), Exec: append([]string{"/bin/sh", "/bin/sleep", "/usr/bin/sleep", "/bin/cat", "/usr/bin/cat"}, Loaders("/bin/sh")...),
		TmpRoot: t.TempDir(), Network: NetworkOff, Namespaces: Describe().Namespaces}
}

// startSh starts sh -c script through l and returns its process and
// output reader.
func startSh(t *testing.T, l *Launcher, dir, script string) (*Process, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.Start(Command{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Stdout: w, Stderr: w})
	w.Close()
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	return p, r
}

func TestLauncherRunsConfinedCommands(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	l := NewLauncher(spec)
	defer l.Close()
	p, r := startSh(t, l, spec.Workspace, "echo inside > in.txt && cat in.txt; echo x > "+outside+"; ls /root; echo tmp=$TMPDIR")
	out, _ := io.ReadAll(r)
	r.Close()
	ws, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !ws.Exited() || !bytes.Contains(out, []byte("inside")) || !bytes.Contains(out, []byte("tmp="+spec.TmpRoot)) {
		t.Fatalf("status %v, output:\n%s", ws, out)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("a confined command wrote outside its workspace:\n%s", out)
	}
	if !bytes.Contains(out, []byte("Permission denied")) {
		t.Fatalf("want the kernel's refusals in the output:\n%s", out)
	}
}

func TestKillAndCloseEndEverything(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	l := NewLauncher(spec)
	p, r := startSh(t, l, spec.Workspace, "sleep 60 & sleep 60")
	defer r.Close()
	start := time.Now()
	p.Kill()
	ws, err := p.Wait()
	if err != nil || !ws.Signaled() || time.Since(start) > 10*time.Second {
		t.Fatalf("Kill: %v %v after %s", ws, err, time.Since(start))
	}
	// A command still running when the launcher closes is killed with
	// its helper, and the temporary directories go.
	p2, r2 := startSh(t, l, spec.Workspace, "sleep 60")
	defer r2.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, _ = p2.Wait() // the helper may or may not report the kill before it exits
	if _, err := os.Stat(spec.TmpRoot); !os.IsNotExist(err) {
		t.Fatalf("the temporary root survived Close: %v", err)
	}
	if _, err := l.Start(Command{Path: "/bin/sh"}); err == nil {
		t.Fatal("a closed launcher started a command")
	}
}

func TestHelperIsRestartedAfterItDies(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	l := NewLauncher(spec)
	defer l.Close()
	p, r := startSh(t, l, spec.Workspace, "true")
	p.Wait()
	r.Close()
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	_ = h.cmd.Process.Kill()
	<-h.done
	p, r = startSh(t, l, spec.Workspace, "echo again")
	out, _ := io.ReadAll(r)
	r.Close()
	if _, err := p.Wait(); err != nil || !bytes.Contains(out, []byte("again")) {
		t.Fatalf("after the helper died: %v %q", err, out)
	}
}

// TestConfineExec: a long-lived process (as a stdio MCP server is) runs
// confined from its first instruction.
func TestConfineExec(t *testing.T) {
	requireLandlock(t)
	spec := testSpec(t)
	outside := filepath.Join(t.TempDir(), "outside.txt")
	cmd := exec.Command("/bin/sh", "-c", "echo ok > ok.txt && cat ok.txt; echo x > "+outside)
	cmd.Dir = spec.Workspace
	if err := Confine(cmd, spec); err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	if !bytes.Contains(out, []byte("ok")) || !bytes.Contains(out, []byte("Permission denied")) {
		t.Fatalf("output:\n%s", out)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the confined process wrote outside its workspace")
	}
}

// TestNoExecWorkspace: with namespaces, a program copied into the
// workspace cannot run, not even through the dynamic loader.
func TestNoExecWorkspace(t *testing.T) {
	st := requireLandlock(t)
	if !st.Namespaces {
		if os.Getenv(expectNamespaces) == "1" {
			t.Fatalf("namespaces were expected here: %s", st.Reason)
		}
		t.Skipf("no namespaces here: %s", st.Reason)
	}
	spec := testSpec(t)
	spec.Exec = append(spec.Exec, "/bin/cp", "/usr/bin/cp")
	l := NewLauncher(spec)
	defer l.Close()
	loader := "/lib64/ld-linux-x86-64.so.2"
	if ls := Loaders("/bin/sh"); len(ls) > 0 {
		loader = ls[0]
	}
	p, r := startSh(t, l, spec.Workspace, "cp /bin/sleep ./s && ./s 0 && echo ran-direct; "+loader+" ./s 0 && echo ran-loader; echo end")
	out, _ := io.ReadAll(r)
	r.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("end")) || bytes.Contains(out, []byte("ran-")) {
		t.Fatalf("a program copied into the workspace ran:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(spec.Workspace, "s")); err != nil {
		t.Fatalf("the copy was not even made, so this proves nothing:\n%s", out)
	}
}

// expectNamespaces is set by TestUnprivilegedUser for the tests it runs.
const expectNamespaces = "RULEAGENT_SANDBOX_TEST_EXPECT_NS"

// TestUnprivilegedUser runs the launcher tests again as the user nobody,
// as a server that is not root runs, and non-dumpable, as the ruleagent
// server makes itself: the helper then sets up its namespaces inside a
// user namespace of its own, which it maps itself.
func TestUnprivilegedUser(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("already not root: the other tests cover this case")
	}
	if why := unprivilegedUserNamespacesForbidden(); why != "" {
		t.Skipf("this system forbids unprivileged user namespaces: %s", why)
	}
	dir, bin := copyTestBinary(t)
	tests := "^(TestLauncherRunsConfinedCommands|TestKillAndCloseEndEverything|TestConfineExec|TestNoExecWorkspace|TestSocketFamiliesWithNetworkOff|TestDescribeSaysNamespaces|TestConnectListNamesResolve|TestRootOnlyFilesUnreadable|TestLibraryProgramsDoNotRun)$"
	cmd := exec.Command(bin, "-test.run", tests, "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + dir, "HOME=/nonexistent", expectNamespaces + "=1", nonDumpableEnv + "=1",
		libraryProgramEnv + "=" + plantLibraryProgram(t)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || bytes.Count(out, []byte("--- PASS")) != 9 {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// copyTestBinary copies the test binary into a new directory every user
// may enter and write (removed at the end of the test).
func copyTestBinary(t *testing.T) (dir, bin string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandbox-nobody-")
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
	bin = filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// unprivilegedUserNamespacesForbidden names the system setting that
// forbids unprivileged user namespaces here, if one does.
func unprivilegedUserNamespacesForbidden() string {
	for _, s := range []struct{ file, forbidden string }{
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(s.file); err == nil && strings.TrimSpace(string(b)) == s.forbidden {
			return s.file + "=" + s.forbidden
		}
	}
	return ""
}

// TestDescribeSaysNamespaces: where namespaces are expected (as root, and
// as nobody in TestUnprivilegedUser), Describe reports them, and its
// mechanism says so.
func TestDescribeSaysNamespaces(t *testing.T) {
	st := requireLandlock(t)
	if os.Getenv(expectNamespaces) != "1" && os.Geteuid() != 0 {
		t.Skip("namespaces are only expected as root or under TestUnprivilegedUser")
	}
	if !st.Namespaces || !strings.Contains(st.Mechanism, "namespaces") {
		t.Fatalf("namespaces expected: %+v", st)
	}
	if os.Geteuid() != 0 && !strings.Contains(st.Mechanism, "user namespace") {
		t.Fatalf("not root: the mechanism should say the namespaces are in a user namespace: %q", st.Mechanism)
	}
}
