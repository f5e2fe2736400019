package sandbox

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runSh runs script confined by spec and returns its output.
func runSh(t *testing.T, spec Spec, script string) string {
	t.Helper()
	l := NewLauncher(spec)
	defer l.Close()
	p, r := startSh(t, l, spec.Workspace, script)
	out, _ := io.ReadAll(r)
	r.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// namespaceModes are the ways the tests confine: without namespaces
// always, with them where this system gives them.
func namespaceModes() []bool {
	if Describe().Namespaces {
		return []bool{false, true}
	}
	return []bool{false}
}

// TestRootOnlyFilesUnreadable: a confined command reads only what every
// user may read under /etc, even when it runs as root (as the owner of
// /etc/shadow it would otherwise read it), with and without namespaces.
func TestRootOnlyFilesUnreadable(t *testing.T) {
	requireLandlock(t)
	var secrets [][]byte
	for _, p := range []string{"/etc/shadow", "/etc/gshadow"} {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			line, _, _ := bytes.Cut(b, []byte("\n"))
			secrets = append(secrets, line)
		}
	}
	keys, _ := filepath.Glob("/etc/ssl/private/*")
	for _, k := range keys {
		if b, err := os.ReadFile(k); err == nil && len(b) > 40 {
			secrets = append(secrets, b[len(b)-40:])
		}
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the files are unreadable to this user anyway; checking the sandbox keeps them so")
	}
	for _, ns := range namespaceModes() {
		spec := testSpec(t)
		spec.Namespaces = ns
		out := runSh(t, spec, "cat /etc/shadow /etc/gshadow /etc/shadow- /etc/ssl/private/*; ls /etc/ssl/private; cat /etc/hostname /etc/passwd > /dev/null && echo public-ok; echo end")
		if !strings.Contains(out, "end") || !strings.Contains(out, "public-ok") {
			t.Fatalf("namespaces=%v: the probe did not run to its end, or could not read public files:\n%s", ns, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, string(s)) {
				t.Fatalf("namespaces=%v: a confined command read a root-only file:\n%s", ns, out)
			}
		}
	}
}

// libraryProgramEnv passes a program planted by root to the tests
// TestUnprivilegedUser runs as nobody.
const libraryProgramEnv = "RULEAGENT_SANDBOX_TEST_LIBRARY_PROGRAM"

// plantLibraryProgram copies an interpreter (perl) into a new directory of
// /usr/lib, as a JVM or a bundled Python lies there, and returns its path;
// the directory goes at the end of the test. Only root can do this.
func plantLibraryProgram(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to plant a program under /usr/lib")
	}
	src, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("perl is not installed")
	}
	dir, err := os.MkdirTemp("/usr/lib", "ruleagent-sandbox-test-")
	if err != nil {
		t.Skipf("cannot write /usr/lib: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "perl")
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return prog
}

// TestLibraryProgramsDoNotRun: an interpreter under a readable library
// tree cannot be run, not through the dynamic loader, not through a
// symlink in the workspace, not from a copy; a hard link made in the
// workspace (from outside the sandbox) cannot run either where the
// workspace is mounted noexec (with namespaces). The commands try to print
// "ran".
func TestLibraryProgramsDoNotRun(t *testing.T) {
	requireLandlock(t)
	prog := os.Getenv(libraryProgramEnv) // planted by TestUnprivilegedUser
	if prog == "" {
		prog = plantLibraryProgram(t)
	}
	loader := Loaders("/bin/sh")[0]
	for _, ns := range namespaceModes() {
		spec := testSpec(t)
		spec.Namespaces = ns
		spec.Exec = append(spec.Exec, "/bin/ln", "/usr/bin/ln", "/bin/cp", "/usr/bin/cp")
		script := strings.NewReplacer("LOADER", loader, "PROG", prog).Replace(`
LOADER PROG -e 'print "ran-loader\n"'
PROG -e 'print "ran-direct\n"'
ln -s PROG ./perl-link && ./perl-link -e 'print "ran-symlink\n"'
LOADER ./perl-link -e 'print "ran-symlink-loader\n"'
cp PROG ./perl-copy; LOADER ./perl-copy -e 'print "ran-copy\n"'
ln PROG ./perl-hard2 && LOADER ./perl-hard2 -e 'print "ran-hardlink-inside\n"'
echo end`)
		if ns {
			// A hard link made before, outside the sandbox.
			if err := os.Link(prog, filepath.Join(spec.Workspace, "perl-hard")); err == nil {
				script = loader + ` ./perl-hard -e 'print "ran-hardlink\n"'` + "\n" + script
			} else {
				t.Logf("no hard link across these file systems: %v", err)
			}
		}
		out := runSh(t, spec, script)
		if !strings.Contains(out, "end") || strings.Contains(out, "ran-") {
			t.Fatalf("namespaces=%v: a program under /usr/lib ran:\n%s", ns, out)
		}
	}
}

// TestSystemProgramsAreWithheld: the walk of the system trees finds the
// planted interpreter and owner-only files, and an allowed program under
// a library tree stays readable.
func TestSystemProgramsAreWithheld(t *testing.T) {
	// The process's index, walked before the program was planted, finds
	// it when it is brought up to date.
	_ = systemWithheld()
	prog := plantLibraryProgram(t)
	w := systemWithheld()
	found := map[string]bool{}
	for _, p := range w {
		found[p] = true
	}
	if !found[prog] {
		t.Errorf("the planted program %s is not withheld", prog)
	}
	if _, err := os.Stat("/etc/shadow"); err == nil && !found["/etc/shadow"] {
		t.Error("/etc/shadow is not withheld")
	}
	for _, p := range w {
		if strings.HasSuffix(p, "/libc.so.6") || strings.Contains(p, "ld-linux") {
			t.Errorf("a library is withheld: %s", p)
		}
	}
	plan := makeReadPlan([]string{"/usr/lib"}, w, func(p string) bool { return p == prog })
	granted := false
	for i, r := range plan.rules {
		if r == prog || (r == filepath.Dir(prog) && plan.access[i] == accessRead) {
			granted = true
		}
	}
	if !granted {
		t.Error("an allowed program under /usr/lib is not readable")
	}
}
