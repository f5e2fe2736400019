package edit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
)

func TestSessionDir(t *testing.T) {
	keys := []string{"thread-42", "../../etc", "a/b", "a_b", "", ".", "..", "x\x00y", "日本", strings.Repeat("k", 500), "run-1"}
	seen := map[string]string{}
	for _, k := range keys {
		d := sessionDir(k)
		if d == "" || d == "." || d == ".." || strings.ContainsAny(d, "/\\.\x00") || len(d) > 80 {
			t.Errorf("sessionDir(%q) = %q is not one safe path component", k, d)
		}
		if prev, dup := seen[d]; dup {
			t.Errorf("sessionDir(%q) = sessionDir(%q) = %q", k, prev, d)
		}
		seen[d] = k
	}
	if !strings.HasPrefix(sessionDir("thread-42"), "thread-42-") {
		t.Errorf("a safe key should stay recognisable: %q", sessionDir("thread-42"))
	}
}

func TestBackupsAndRestore(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "src", "f.txt")
	put(t, p, "v0\n")
	tl := newTool(t, dir, "")
	s := in("thread-1")

	do(t, tl, s, `{"operation":"list_backups","path":"src/f.txt"}`, nil, "no backups of src/f.txt")
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt"}`, tools.ErrFileNotFound, "no backups of src/f.txt in this session")
	do(t, tl, s, `{"operation":"line","path":"src/f.txt","line_from":1,"content":"v1"}`, nil, "(backup v1)")
	do(t, tl, s, `{"operation":"search","path":"src/f.txt","search":"v1","replace":"v2"}`, nil, "(backup v2)")
	do(t, tl, s, `{"operation":"insert","path":"src/f.txt","after_line":1,"content":"more"}`, nil, "(backup v3)")
	do(t, tl, s, `{"operation":"delete","path":"src/f.txt","line_from":2}`, nil, "(backup v4)")

	// The backups sit where the layout says, private to the owner.
	bp := filepath.Join(dir, filetool.BackupDir, sessionDir("thread-1"), "src", "f.txt.v1")
	if got := get(t, bp); got != "v0\n" {
		t.Fatalf("backup v1 = %q", got)
	}
	if fi, _ := os.Stat(bp); fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup mode %v, want 0600", fi.Mode().Perm())
	}

	out := do(t, tl, s, `{"operation":"list_backups","path":"src/f.txt"}`, nil, "newest first")
	if strings.Index(out, "v4 ") > strings.Index(out, "v1 ") {
		t.Fatalf("not newest first:\n%s", out)
	}
	do(t, tl, s, `{"operation":"list_backups"}`, nil, "src/f.txt: v1, v2, v3, v4")

	// restore takes the latest by default (the content before the delete),
	// and backs up what it replaces.
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt"}`, nil, "restored src/f.txt to backup v4", "previous content is now backup v5")
	if got := get(t, p); got != "v2\nmore\n" {
		t.Fatalf("after restore: %q", got)
	}
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt","version":1}`, nil, "to backup v1")
	if got := get(t, p); got != "v0\n" {
		t.Fatalf("after restore v1: %q", got)
	}
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt","version":1}`, tools.ErrInvalidArgs, "already has the content")
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt","version":99}`, tools.ErrFileNotFound, "no backup v99", "v1, v2")
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt","version":-1}`, tools.ErrInvalidArgs)

	// A deleted file can be brought back.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	do(t, tl, s, `{"operation":"restore","path":"src/f.txt","version":2}`, nil, "restored")
	if got := get(t, p); got != "v1\n" {
		t.Fatalf("recreated: %q", got)
	}
	assertNoTempFiles(t, dir)
}

func TestBackupsAreIsolatedPerSession(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	put(t, p, "original\n")
	tl := newTool(t, dir, "")
	alice, bob := in("alice"), in("bob")
	do(t, tl, alice, `{"operation":"line","path":"f.txt","line_from":1,"content":"alice was here"}`, nil, "backup v1")

	do(t, tl, bob, `{"operation":"list_backups","path":"f.txt"}`, nil, "no backups of f.txt in this session")
	do(t, tl, bob, `{"operation":"list_backups"}`, nil, "no backups in this session")
	do(t, tl, bob, `{"operation":"restore","path":"f.txt"}`, tools.ErrFileNotFound)
	do(t, tl, bob, `{"operation":"restore","path":"f.txt","version":1}`, tools.ErrFileNotFound)
	if got := get(t, p); got != "alice was here\n" {
		t.Fatalf("bob's refused restore changed the file: %q", got)
	}
	// Bob's own edits number their backups from 1 again.
	do(t, tl, bob, `{"operation":"line","path":"f.txt","line_from":1,"content":"bob"}`, nil, "backup v1")
	do(t, tl, bob, `{"operation":"restore","path":"f.txt"}`, nil, "to backup v1")
	if got := get(t, p); got != "alice was here\n" {
		t.Fatalf("bob's restore brought back %q, not his own backup", got)
	}

	// Calls without a session have a key of their own per tool instance.
	none := context.Background()
	do(t, tl, none, `{"operation":"list_backups"}`, nil, "no backups in this session")
	do(t, tl, none, `{"operation":"line","path":"f.txt","line_from":1,"content":"anon"}`, nil, "backup v1")
	other := newTool(t, dir, "")
	do(t, other, none, `{"operation":"list_backups"}`, nil, "no backups in this session")
	do(t, tl, none, `{"operation":"list_backups"}`, nil, "f.txt: v1")
	// The run id is the key when there is no thread id.
	run := tools.WithCall(context.Background(), &tools.CallInfo{RunID: "run-9"})
	do(t, tl, run, `{"operation":"list_backups"}`, nil, "no backups in this session")
}

func TestMaxHistory(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "f.txt"), "0\n")
	tl := newTool(t, dir, `{"maxHistory":3}`)
	s := in("s")
	for i := 1; i <= 5; i++ {
		do(t, tl, s, fmt.Sprintf(`{"operation":"line","path":"f.txt","line_from":1,"content":"%d"}`, i), nil, fmt.Sprintf("backup v%d", i))
	}
	out := do(t, tl, s, `{"operation":"list_backups","path":"f.txt"}`, nil, "v5", "v4", "v3")
	if strings.Contains(out, "v2 ") || strings.Contains(out, "v1 ") {
		t.Fatalf("more than maxHistory versions kept:\n%s", out)
	}
	entries, err := os.ReadDir(filepath.Join(dir, filetool.BackupDir, sessionDir("s")))
	if err != nil || len(entries) != 3 {
		t.Fatalf("backup files: %v, %v", entries, err)
	}
	do(t, tl, s, `{"operation":"restore","path":"f.txt","version":1}`, tools.ErrFileNotFound, "v3, v4, v5")
}

// TestBackupFailureLeavesFile plants obstacles where the backups go: the
// edit must be refused, the file untouched, and nothing written elsewhere.
func TestBackupFailureLeavesFile(t *testing.T) {
	for name, plant := range map[string]func(ws, outside string) error{
		"state dir is a file": func(ws, _ string) error { return os.WriteFile(filepath.Join(ws, ".ruleagent"), []byte("x"), 0o644) },
		"backup dir is a symlink out": func(ws, outside string) error {
			if err := os.Mkdir(filepath.Join(ws, ".ruleagent"), 0o755); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(ws, filetool.BackupDir))
		},
		"state dir is a symlink out": func(ws, outside string) error { return os.Symlink(outside, filepath.Join(ws, ".ruleagent")) },
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
			put(t, filepath.Join(ws, "f.txt"), "keep\n")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := plant(ws, outside); err != nil {
				t.Fatal(err)
			}
			tl := newTool(t, ws, "")
			do(t, tl, in("s"), `{"operation":"line","path":"f.txt","line_from":1,"content":"changed"}`, tools.ErrExecutionFailed, "not changed")
			if got := get(t, filepath.Join(ws, "f.txt")); got != "keep\n" {
				t.Fatalf("file changed to %q", got)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("backups escaped to %s: %v", outside, entries)
			}
		})
	}
}

// TestConcurrentEdits checks that edits through one tool are serialised:
// every insertion lands and every backup gets its own version.
func TestConcurrentEdits(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, "f.txt"), "end\n")
	tl := newTool(t, dir, `{"maxHistory":50}`)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := fmt.Sprintf(`{"operation":"insert","path":"f.txt","after_line":0,"content":"line %d"}`, i)
			if _, err := tl.Call(in("s"), json.RawMessage(args)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(get(t, filepath.Join(dir, "f.txt")), "\n"); got != 17 {
		t.Fatalf("%d lines, want 17: edits were lost", got)
	}
	do(t, tl, in("s"), `{"operation":"list_backups","path":"f.txt"}`, nil, "v16 ", "v1 ")
	if tl.locks.Held() != 0 {
		t.Fatal("path locks not released")
	}
}

func TestModeKeptAfterEdit(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.sh")
	put(t, p, "#!/bin/sh\necho a\n")
	if err := os.Chmod(p, 0o751); err != nil {
		t.Fatal(err)
	}
	tl := newTool(t, dir, "")
	do(t, tl, in("s"), `{"operation":"search","path":"run.sh","search":"echo a","replace":"echo b"}`, nil)
	do(t, tl, in("s"), `{"operation":"restore","path":"run.sh"}`, nil)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o751 {
		t.Fatalf("mode %v, want 0751", fi.Mode().Perm())
	}
}
