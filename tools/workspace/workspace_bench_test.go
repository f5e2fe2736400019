package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// BenchmarkResolve is the containment check of one file access: a path
// the model gave, resolved inside the workspace (symlinks followed, deny
// list applied), for a file that exists.
func BenchmarkResolve(b *testing.B) {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src", "pkg"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "pkg", "main.go"), []byte("package main\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	w, err := Open(dir, Options{Deny: []string{".git", "secrets"}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for _, p := range []string{"src/pkg/main.go", filepath.Join(dir, "src/pkg/main.go")} {
		if _, err := w.Resolve(p); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("relative", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = w.Resolve("src/pkg/main.go")
		}
	})
	b.Run("absolute", func(b *testing.B) {
		abs := filepath.Join(dir, "src/pkg/main.go")
		b.ReportAllocs()
		for b.Loop() {
			_, _ = w.Resolve(abs)
		}
	})
	// The server's chains folder and data directory inside the workspace
	// (a workspace of "."): the check is a prefix comparison.
	b.Run("server-paths", func(b *testing.B) {
		ws, err := Open(dir, Options{Deny: []string{".git", "secrets"}, ServerPaths: []tools.ServerPath{
			{Path: filepath.Join(dir, "chains")}, {Path: filepath.Join(dir, "data"), Secret: true}}})
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = ws.Resolve("src/pkg/main.go")
		}
	})
}
