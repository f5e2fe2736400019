package adversarial_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	_ "github.com/ruleagent/ruleagent/tools/edit"
	_ "github.com/ruleagent/ruleagent/tools/read"
	_ "github.com/ruleagent/ruleagent/tools/write"
)

// Markers that must never appear in any output: they are written only
// outside the workspace or in its denied part.
const (
	outsideSecret = "TOPSECRET-OUTSIDE"
	deniedSecret  = "TOPSECRET-DENIED"
)

// pathsFixture is a workspace full of traps, next to an "outside" directory
// holding a secret, all in one temporary base directory.
type pathsFixture struct {
	base, ws, outside string
	read, write, edit tools.Tool
}

func newPathsFixture(t *testing.T) *pathsFixture {
	t.Helper()
	base := t.TempDir()
	f := &pathsFixture{base: base, ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	secret := filepath.Join(f.outside, "secret.txt")
	steps := []error{
		os.MkdirAll(filepath.Join(f.ws, "sub"), 0o755),
		os.MkdirAll(filepath.Join(f.ws, "secret"), 0o755),
		os.MkdirAll(f.outside, 0o755),
		os.WriteFile(secret, []byte(outsideSecret+"\n"), 0o644),
		os.WriteFile(filepath.Join(f.ws, "a.txt"), []byte("hello workspace\n"), 0o644),
		os.WriteFile(filepath.Join(f.ws, "secret", "k.txt"), []byte(deniedSecret+"\n"), 0o644),
		os.Symlink(secret, filepath.Join(f.ws, "link-abs")),
		os.Symlink("../outside/secret.txt", filepath.Join(f.ws, "link-rel")),
		os.Symlink(f.outside, filepath.Join(f.ws, "dir-out")),
		os.Symlink("../outside/created.txt", filepath.Join(f.ws, "dangling-out")),
		os.Symlink("loop2", filepath.Join(f.ws, "loop1")),
		os.Symlink("loop1", filepath.Join(f.ws, "loop2")),
		os.Symlink("secret", filepath.Join(f.ws, "to-secret")),
		os.Link(secret, filepath.Join(f.ws, "hard.txt")),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	config, _ := json.Marshal(map[string]any{"workDir": f.ws, "deny": []string{"secret"}})
	f.read, f.write, f.edit = build(t, "read", config), build(t, "write", config), build(t, "edit", config)
	return f
}

// build makes a tool through its registered factory, as the agent does.
func build(t *testing.T, name string, config json.RawMessage) tools.Tool {
	t.Helper()
	d, ok := tools.Builtins.Lookup(name)
	if !ok {
		t.Fatalf("builtin %q is not registered", name)
	}
	tl, err := d.New(tools.BuildContext{}, config)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if c, ok := tl.(interface{ Close() error }); ok {
		t.Cleanup(func() { c.Close() })
	}
	return tl
}

// snapshot records every entry under dir: its type, mode, link target or
// content hash. Two equal snapshots mean nothing was created, removed or
// changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func assertSame(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, d := range after {
		if before[p] != d {
			t.Errorf("changed or created: %s (%s, was %q)", p, d, before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("removed: %s", p)
		}
	}
}

func assertNoSecrets(t *testing.T, text string) {
	t.Helper()
	if strings.Contains(text, outsideSecret) || strings.Contains(text, deniedSecret) {
		t.Fatalf("a secret leaked into the output:\n%s", text)
	}
}

func args(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// TestHostilePaths runs each hostile input through the real tools and checks
// that it is refused with the expected kind, that no secret shows in the
// error, and that nothing anywhere in the base directory, inside the
// workspace or out, was created or changed.
func TestHostilePaths(t *testing.T) {
	f := newPathsFixture(t)
	outsideAbs := filepath.Join(f.outside, "secret.txt")
	// An edit makes a backup, so that the backup directory exists and its
	// refusals are policy, not absence.
	if _, err := f.edit.Call(context.Background(), args("operation", "line", "path", "a.txt", "line_from", 1, "content", "edited")); err != nil {
		t.Fatal(err)
	}
	sessions, err := os.ReadDir(filepath.Join(f.ws, ".ruleagent", "backups"))
	if err != nil || len(sessions) != 1 {
		t.Fatalf("backup sessions: %v, %v", sessions, err)
	}
	backupFile := ".ruleagent/backups/" + sessions[0].Name() + "/a.txt.v1"
	overlong := strings.Repeat("a/", 2100) + "x"
	cases := []struct {
		name string
		tool tools.Tool
		args json.RawMessage
		kind error
	}{
		{"dot-dot escape", f.read, args("path", "../outside/secret.txt"), tools.ErrInvalidPath},
		{"dot-dot through an existing directory", f.read, args("path", "sub/../../outside/secret.txt"), tools.ErrInvalidPath},
		{"absolute path outside", f.read, args("path", outsideAbs), tools.ErrInvalidPath},
		{"absolute path climbing out of the workspace", f.read, args("path", f.ws+"/../outside/secret.txt"), tools.ErrInvalidPath},
		{"/etc/passwd", f.read, args("path", "/etc/passwd"), tools.ErrInvalidPath},
		{"symlink out, absolute", f.read, args("path", "link-abs"), tools.ErrInvalidPath},
		{"symlink out, relative", f.read, args("path", "link-rel"), tools.ErrInvalidPath},
		{"directory symlink out", f.read, args("path", "dir-out/secret.txt"), tools.ErrInvalidPath},
		{"symlink loop", f.read, args("path", "loop1"), tools.ErrInvalidPath},
		{"hard link to a file outside, read", f.read, args("path", "hard.txt"), tools.ErrPolicyDenied},
		{"NUL byte", f.read, args("path", "a.txt\x00../../outside/secret.txt"), tools.ErrInvalidPath},
		{"home directory", f.read, args("path", "~/.bashrc"), tools.ErrInvalidPath},
		{"network path", f.read, args("path", `\\server\share\x`), tools.ErrInvalidPath},
		{"overlong path", f.read, args("path", overlong), tools.ErrInvalidPath},
		{"denied sub-path", f.read, args("path", "secret/k.txt"), tools.ErrPolicyDenied},
		{"denied sub-path through a symlink", f.read, args("path", "to-secret/k.txt"), tools.ErrPolicyDenied},
		{"list a denied directory", f.read, args("operation", "list", "path", "secret"), tools.ErrPolicyDenied},
		{"list the parent", f.read, args("operation", "list", "path", ".."), tools.ErrInvalidPath},
		{"search a denied directory through a symlink", f.read, args("query", "TOPSECRET", "path", "to-secret"), tools.ErrPolicyDenied},
		{"search outside through a symlink", f.read, args("query", "TOPSECRET", "path", "dir-out"), tools.ErrInvalidPath},
		{"list the backups", f.read, args("operation", "list", "path", ".ruleagent/backups"), tools.ErrPolicyDenied},
		{"read a backup", f.read, args("path", backupFile), tools.ErrPolicyDenied},
		{"overwrite a backup", f.write, args("path", backupFile, "content", "forged", "mode", "overwrite"), tools.ErrPolicyDenied},
		{"edit a backup", f.edit, args("operation", "line", "path", backupFile, "line_from", 1, "content", "forged"), tools.ErrPolicyDenied},

		{"write through a dangling symlink out", f.write, args("path", "dangling-out", "content", "pwned"), tools.ErrInvalidPath},
		{"overwrite through a symlink out", f.write, args("path", "link-abs", "content", "pwned", "mode", "overwrite"), tools.ErrInvalidPath},
		{"append through a relative symlink out", f.write, args("path", "link-rel", "content", "pwned", "mode", "append"), tools.ErrInvalidPath},
		{"missing parent then dot-dot", f.write, args("path", "nope/../../x", "content", "pwned"), tools.ErrInvalidPath},
		{"create under a directory symlink out", f.write, args("path", "dir-out/new.txt", "content", "pwned"), tools.ErrInvalidPath},
		{"absolute path outside, write", f.write, args("path", filepath.Join(f.base, "x"), "content", "pwned"), tools.ErrInvalidPath},
		{"hard link to a file outside, overwrite", f.write, args("path", "hard.txt", "content", "pwned", "mode", "overwrite"), tools.ErrPolicyDenied},
		{"hard link to a file outside, append", f.write, args("path", "hard.txt", "content", "pwned", "mode", "append"), tools.ErrPolicyDenied},
		{"write into a denied directory", f.write, args("path", "secret/new.txt", "content", "x"), tools.ErrPolicyDenied},
		{"write into a denied directory through a symlink", f.write, args("path", "to-secret/k.txt", "content", "x", "mode", "overwrite"), tools.ErrPolicyDenied},
		{"forge a backup", f.write, args("path", ".ruleagent/backups/victim/a.txt.v1", "content", "forged"), tools.ErrPolicyDenied},
		{"write the workspace directory", f.write, args("path", ".", "content", "x", "mode", "overwrite"), tools.ErrInvalidPath},
		{"write NUL", f.write, args("path", "x\x00y", "content", "x"), tools.ErrInvalidPath},

		{"edit through a symlink out", f.edit, args("operation", "search", "path", "link-rel", "search", "TOPSECRET", "replace", "x"), tools.ErrInvalidPath},
		{"edit a hard link to a file outside", f.edit, args("operation", "line", "path", "hard.txt", "line_from", 1, "content", "pwned"), tools.ErrPolicyDenied},
		{"edit a denied file", f.edit, args("operation", "delete", "path", "secret/k.txt", "line_from", 1), tools.ErrPolicyDenied},
		{"restore a path outside", f.edit, args("operation", "restore", "path", "../outside/secret.txt"), tools.ErrInvalidPath},
		{"restore /etc/passwd", f.edit, args("operation", "restore", "path", "/etc/passwd"), tools.ErrInvalidPath},
		{"restore through a dangling symlink out", f.edit, args("operation", "restore", "path", "dangling-out"), tools.ErrInvalidPath},
		{"list backups of a path outside", f.edit, args("operation", "list_backups", "path", "dir-out/secret.txt"), tools.ErrInvalidPath},
		{"restore a denied file", f.edit, args("operation", "restore", "path", "to-secret/k.txt"), tools.ErrPolicyDenied},
	}
	if len(cases) < 20 {
		t.Fatalf("the suite needs at least 20 hostile inputs, has %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, f.base)
			res, err := c.tool.Call(context.Background(), c.args)
			if !errors.Is(err, c.kind) {
				t.Fatalf("%s %s: err = %v, result %q; want %v", c.tool.Info().Name, c.args, err, res.Text, c.kind)
			}
			assertNoSecrets(t, err.Error()+res.Text)
			assertSame(t, before, snapshot(t, f.base))
		})
	}
}

// TestListingsAndSearchesHideWhatIsDenied checks the outputs that succeed:
// they must not show denied entries, nor any content from denied or outside
// files reached through symlinks or hard links.
func TestListingsAndSearchesHideWhatIsDenied(t *testing.T) {
	f := newPathsFixture(t)
	// Make a backup exist, so there is something to hide under .ruleagent.
	if _, err := f.edit.Call(context.Background(), args("operation", "line", "path", "a.txt", "line_from", 1, "content", "edited")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args json.RawMessage
		want string
		not  []string
	}{
		{"list the workspace", args("operation", "list"), "a.txt", []string{"secret/", "k.txt"}},
		{"list recursively", args("operation", "list", "recursive", true, "max_depth", 10), "a.txt", []string{"secret/", "k.txt", "backups", "a.txt.v1"}},
		{"list the state directory", args("operation", "list", "path", ".ruleagent"), "is empty", []string{"backups"}},
		{"search everything for the markers", args("query", "TOPSECRET"), "no matches", nil},
		{"search everything with a regex", args("query", ".", "use_regex", true, "pattern", "**"), "a.txt:1: edited", []string{"a.txt.v1", "hello workspace"}},
		{"search a symlinked file's name", args("query", "SECRET", "ignore_case", true, "pattern", "*"), "no matches", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := f.read.Call(context.Background(), c.args)
			if err != nil {
				t.Fatal(err)
			}
			assertNoSecrets(t, res.Text)
			if !strings.Contains(res.Text, c.want) {
				t.Fatalf("result lacks %q:\n%s", c.want, res.Text)
			}
			for _, n := range c.not {
				if strings.Contains(res.Text, n) {
					t.Fatalf("result shows %q:\n%s", n, res.Text)
				}
			}
		})
	}
}

// TestHostileSessionKeys edits under session keys that try to steer the
// backup path, and checks every backup lands in one plain directory under
// the backup root, that nothing outside the workspace changes, and that each
// key still sees only its own backups.
func TestHostileSessionKeys(t *testing.T) {
	f := newPathsFixture(t)
	outsideBefore := snapshot(t, f.outside)
	baseEntries, _ := os.ReadDir(f.base)
	keys := []string{
		"../../../outside",
		"../../..",
		"/abs/path",
		"a/../../b",
		"..",
		".",
		"x\x00y",
		strings.Repeat("../", 200),
	}
	for i, key := range keys {
		ctx := tools.WithCall(context.Background(), &tools.CallInfo{ThreadID: key})
		content := "edit " + string(rune('a'+i))
		if _, err := f.edit.Call(ctx, args("operation", "line", "path", "a.txt", "line_from", 1, "content", content)); err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		res, err := f.edit.Call(ctx, args("operation", "list_backups"))
		if err != nil || !strings.Contains(res.Text, "a.txt: v1\n") {
			t.Fatalf("key %q sees %q, %v; want only its own v1", key, res.Text, err)
		}
	}
	assertSame(t, outsideBefore, snapshot(t, f.outside))
	if after, _ := os.ReadDir(f.base); len(after) != len(baseEntries) {
		t.Fatalf("entries appeared next to the workspace: %v", after)
	}
	sessions, err := os.ReadDir(filepath.Join(f.ws, ".ruleagent", "backups"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != len(keys) {
		t.Fatalf("%d session directories for %d distinct keys", len(sessions), len(keys))
	}
	for _, s := range sessions {
		if !s.IsDir() || strings.ContainsAny(s.Name(), "./\x00") {
			t.Errorf("unsafe session directory %q", s.Name())
		}
		if _, err := os.Stat(filepath.Join(f.ws, ".ruleagent", "backups", s.Name(), "a.txt.v1")); err != nil {
			t.Errorf("backup not where expected: %v", err)
		}
	}
}

// TestBackslashesAreJustNames checks that Windows separators do not act as
// separators on this platform: the file is created inside the workspace
// under that literal name, and nothing outside changes.
func TestBackslashesAreJustNames(t *testing.T) {
	f := newPathsFixture(t)
	before := snapshot(t, f.outside)
	if _, err := f.write.Call(context.Background(), args("path", `..\..\outside\x`, "content", "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, `..\..\outside\x`)); err != nil {
		t.Fatalf("not created inside the workspace: %v", err)
	}
	assertSame(t, before, snapshot(t, f.outside))
}
