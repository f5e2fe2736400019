package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func setup(t *testing.T) (*Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub"), filepath.Join(ws, "secret")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "secret", "k"), []byte("k"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o644))
	must(t, os.Symlink(filepath.Join(outside, "x"), filepath.Join(ws, "out-abs")))
	must(t, os.Symlink("../outside/x", filepath.Join(ws, "out-rel")))
	must(t, os.Symlink("../outside/nothing", filepath.Join(ws, "dangling-out")))
	must(t, os.Symlink("sub/new.txt", filepath.Join(ws, "dangling-in")))
	must(t, os.Symlink("a.txt", filepath.Join(ws, "in-link")))
	must(t, os.Symlink("secret", filepath.Join(ws, "to-secret")))
	must(t, os.Symlink("loop2", filepath.Join(ws, "loop1")))
	must(t, os.Symlink("loop1", filepath.Join(ws, "loop2")))
	must(t, os.Link(filepath.Join(outside, "x"), filepath.Join(ws, "hard")))
	w, err := Open(ws, Options{Deny: []string{"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, ws, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	w, ws, outside := setup(t)
	cases := []struct {
		path string
		new  bool
		want string
		kind error
	}{
		{path: "a.txt", want: "a.txt"},
		{path: "./sub/../a.txt", want: "a.txt"},
		{path: "", want: "."},
		{path: filepath.Join(ws, "a.txt"), want: "a.txt"},
		{path: "in-link", want: "a.txt"},
		{path: "dangling-in", new: true, want: "sub/new.txt"},
		{path: "dangling-in", kind: tools.ErrFileNotFound},
		{path: "../outside/x", kind: tools.ErrInvalidPath},
		{path: "sub/../../outside/x", kind: tools.ErrInvalidPath},
		{path: filepath.Join(outside, "x"), kind: tools.ErrInvalidPath},
		{path: "/etc/passwd", kind: tools.ErrInvalidPath},
		{path: "out-abs", kind: tools.ErrInvalidPath},
		{path: "out-rel", kind: tools.ErrInvalidPath},
		{path: "dangling-out", new: true, kind: tools.ErrInvalidPath},
		{path: "nope/../../x", new: true, kind: tools.ErrInvalidPath},
		{path: "nope/../a.txt", new: true, kind: tools.ErrInvalidPath},
		{path: "nope/new.txt", new: true, want: "nope/new.txt"},
		{path: "secret/k", kind: tools.ErrPolicyDenied},
		{path: "to-secret/k", kind: tools.ErrPolicyDenied},
		{path: "loop1", kind: tools.ErrInvalidPath},
		{path: "~/x", kind: tools.ErrInvalidPath},
		{path: "a\x00b", kind: tools.ErrInvalidPath},
		{path: "a.txt/..", kind: tools.ErrInvalidPath},
		{path: "missing.txt", kind: tools.ErrFileNotFound},
		{path: "secret/missing", kind: tools.ErrPolicyDenied},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			var got string
			var err error
			if c.new {
				got, err = w.ResolveNew(c.path)
			} else {
				got, err = w.Resolve(c.path)
			}
			if c.kind != nil {
				if !errors.Is(err, c.kind) {
					t.Fatalf("Resolve(%q) = %q, %v; want error %v", c.path, got, err, c.kind)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", c.path, got, err, c.want)
			}
		})
	}
}

func TestFIFORefusedWithoutBlocking(t *testing.T) {
	w, ws, _ := setup(t)
	if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, _, err := w.ReadFile("pipe", 0); !errors.Is(err, tools.ErrInvalidArgs) {
		t.Fatalf("read of a FIFO: %v", err)
	}
}

func TestHardLinkRefused(t *testing.T) {
	w, _, outside := setup(t)
	if _, _, err := w.ReadFile("hard", 0); !errors.Is(err, tools.ErrPolicyDenied) {
		t.Fatalf("read of hard link: %v", err)
	}
	if _, err := w.WriteFileAtomic("hard", []byte("pwned"), 0o644); !errors.Is(err, tools.ErrPolicyDenied) {
		t.Fatalf("write of hard link: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(outside, "x"))
	if string(b) != "x" {
		t.Fatalf("outside file changed: %q", b)
	}
}

func TestWriteAtomicAndDenyListing(t *testing.T) {
	w, ws, _ := setup(t)
	must(t, os.Chmod(filepath.Join(ws, "a.txt"), 0o600))
	if _, err := w.WriteFileAtomic("a.txt", []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(ws, "a.txt"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not kept: %v", fi.Mode())
	}
	if _, err := w.WriteFileAtomic("deep/er/f.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, entries, err := w.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "secret" {
			t.Fatal("denied directory listed")
		}
		if filepath.Ext(e.Name()) != "" && len(e.Name()) > 5 && e.Name()[0] == '.' {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}
	if _, err := w.WriteFileAtomic("dangling-out", []byte("x"), 0o644); !errors.Is(err, tools.ErrInvalidPath) {
		t.Fatalf("write through dangling symlink out: %v", err)
	}
}
