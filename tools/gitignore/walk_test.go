package gitignore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func collect(t *testing.T, fsys fs.FS, root string, skip func(string) bool) []string {
	t.Helper()
	var got []string
	err := Walk(fsys, root, skip, func(p string, d fs.DirEntry) error {
		if !d.IsDir() {
			got = append(got, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestWalk(t *testing.T) {
	dir := writeTree(t, map[string]string{
		".gitignore":          "*.log\nnode_modules/\n/dist\nsecret/\n",
		"main.go":             "",
		"app.log":             "",
		"dist/bundle.js":      "",
		"node_modules/x/a.js": "",
		".git/config":         "",
		".git/HEAD":           "",
		"src/.gitignore":      "*.gen.go\n!keep.log\n",
		"src/a.go":            "",
		"src/a.gen.go":        "",
		"src/keep.log":        "",
		"src/dist/x.js":       "", // /dist is anchored at the root
		"src/sub/b.go":        "",
		"src/sub/b.gen.go":    "",
		"other/a.gen.go":      "",
		"secret/key.txt":      "",
		"denied/x.txt":        "",
	})
	fsys := os.DirFS(dir)
	if err := os.Symlink("src", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	skip := func(p string) bool { return p == "denied" }
	want := []string{".gitignore", "link", "main.go", "other/a.gen.go", "src/.gitignore", "src/a.go",
		"src/dist/x.js", "src/keep.log", "src/sub/b.go"}
	if got := collect(t, fsys, ".", skip); !slices.Equal(got, want) {
		t.Errorf("walk .:\n got %q\nwant %q", got, want)
	}
	// Starting below the root still applies the root's .gitignore.
	if got, want := collect(t, fsys, "src/sub", nil), []string{"src/sub/b.go"}; !slices.Equal(got, want) {
		t.Errorf("walk src/sub: got %q, want %q", got, want)
	}
	// An ignored directory asked for by name is walked; rules still apply inside.
	if got, want := collect(t, fsys, "node_modules", nil), []string{"node_modules/x/a.js"}; !slices.Equal(got, want) {
		t.Errorf("walk node_modules: got %q, want %q", got, want)
	}
	// A file root is visited as is.
	if got, want := collect(t, fsys, "app.log", nil), []string{"app.log"}; !slices.Equal(got, want) {
		t.Errorf("walk app.log: got %q, want %q", got, want)
	}
}

func TestWalkSkipsDeniedGitignore(t *testing.T) {
	dir := writeTree(t, map[string]string{".gitignore": "*.go\n", "a.go": ""})
	got := collect(t, os.DirFS(dir), ".", func(p string) bool { return p == ".gitignore" })
	if !slices.Equal(got, []string{"a.go"}) {
		t.Errorf("a denied .gitignore was read: %q", got)
	}
}

func TestWalkStops(t *testing.T) {
	dir := writeTree(t, map[string]string{"a/1": "", "a/2": "", "b/1": "", "c": ""})
	fsys := os.DirFS(dir)
	var seen []string
	err := Walk(fsys, ".", nil, func(p string, d fs.DirEntry) error {
		seen = append(seen, p)
		switch p {
		case "a/1":
			return fs.SkipDir // skips the rest of a
		case "b":
			return fs.SkipAll
		}
		return nil
	})
	if err != nil || strings.Join(seen, " ") != ". a a/1 b" {
		t.Errorf("seen %q, err %v", seen, err)
	}
	boom := errors.New("boom")
	if err := Walk(fsys, ".", nil, func(string, fs.DirEntry) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if err := Walk(fsys, "missing", nil, func(string, fs.DirEntry) error { return nil }); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: %v", err)
	}
}
