package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Opening a workspace creates nothing: the folder appears at first use, so
// that loading a folder of chains does not create the workspaces of agents
// that never run.
func TestWorkspaceIsCreatedAtFirstUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "ws")
	w, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Open created the folder: %v", err)
	}
	if _, err := w.WriteFileAtomic("x.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "x.txt")); err != nil || string(b) != "x" {
		t.Fatal(b, err)
	}
	w.Close()

	// Closed before any use, it never creates the folder.
	never := filepath.Join(t.TempDir(), "never")
	w, _ = Open(never, Options{})
	w.Close()
	if _, err := w.Resolve("."); err == nil {
		t.Fatal("a closed workspace resolved a path")
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("a closed workspace created its folder: %v", err)
	}
}

// A path that still holds a placeholder nobody filled in is refused,
// naming it: no folder named ${global.workspace} is ever made.
func TestWorkspaceRefusesAnUnresolvedPlaceholder(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := Open("${global.workspace}/sub", Options{})
	if err == nil || !strings.Contains(err.Error(), "${global.workspace} is not set") {
		t.Fatalf("%v", err)
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Fatalf("created %v", entries)
	}
}
