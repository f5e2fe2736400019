package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

// serverWorkspace is a project directory opened as a workspace, with its
// chains folder and data directory as the server's paths. The workspace
// is opened through a symlink, so that both of its names are checked.
func serverWorkspace(t *testing.T) (*Workspace, string) {
	t.Helper()
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	for _, d := range []string{"chains", "data", "src"} {
		must(t, os.MkdirAll(filepath.Join(proj, d), 0o755))
	}
	must(t, os.WriteFile(filepath.Join(proj, "chains", "agent.json"), []byte("{}"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "data", "state.db"), []byte("secret"), 0o600))
	must(t, os.Symlink("../chains", filepath.Join(proj, "src", "c")))
	must(t, os.Symlink("../data/state.db", filepath.Join(proj, "src", "db")))
	must(t, os.Symlink(proj, filepath.Join(base, "link")))
	w, err := Open(filepath.Join(base, "link"), Options{ServerPaths: []tools.ServerPath{
		{Path: filepath.Join(proj, "chains"), What: "the server's chains folder", Hint: "agents change chains with save_rule_chain"},
		{Path: filepath.Join(base, "link", "data"), What: "the server's data directory", Secret: true},
	}})
	must(t, err)
	t.Cleanup(func() { w.Close() })
	return w, proj
}

func TestServerPathsRefused(t *testing.T) {
	w, proj := serverWorkspace(t)
	for _, p := range []string{"chains/evil.json", "chains/agent.json", "chains", "src/c/evil.json", "./src/../chains/x",
		filepath.Join(proj, "chains", "x.json"), "data/new", "data/state.db", "src/db"} {
		if _, err := w.ResolveNew(p); !errors.Is(err, tools.ErrServerPath) || !errors.Is(err, tools.ErrPolicyDenied) {
			t.Errorf("ResolveNew(%q) = %v, want a server-path refusal", p, err)
		}
		if _, err := w.WriteFileAtomic(p, []byte("x"), 0o644); !errors.Is(err, tools.ErrServerPath) {
			t.Errorf("WriteFileAtomic(%q) = %v", p, err)
		}
	}
	// Secret paths are not read or listed either; the chains folder is.
	for _, p := range []string{"data/state.db", "src/db", "data", "data/missing"} {
		if _, _, err := w.ReadFile(p, 0); !errors.Is(err, tools.ErrServerPath) {
			t.Errorf("ReadFile(%q) = %v", p, err)
		}
	}
	if _, b, err := w.ReadFile("src/c/agent.json", 0); err != nil || string(b) != "{}" {
		t.Errorf("reading a chain: %q, %v", b, err)
	}
	_, entries, _ := w.ReadDir(".")
	for _, e := range entries {
		if e.Name() == "data" {
			t.Error("the data directory is listed")
		}
	}
	var seen []string
	must(t, w.Walk(".", func(p string, _ os.DirEntry, err error) error { seen = append(seen, p); return err }))
	if strings.Contains(strings.Join(seen, " "), "state.db") {
		t.Errorf("Walk reached the data directory: %v", seen)
	}
	// The refusal names the path, the owner and the right way.
	_, err := w.ResolveNew("chains/evil.json")
	want := "permission denied: chains/evil.json is in the server's chains folder, which agents may read but not change; agents change chains with save_rule_chain"
	if err == nil || err.Error() != want {
		t.Errorf("refusal:\n got %v\nwant %s", err, want)
	}
	// Nothing was written.
	if _, err := os.Stat(filepath.Join(proj, "chains", "evil.json")); err == nil {
		t.Error("chains/evil.json was written")
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "data", "state.db")); string(b) != "secret" {
		t.Errorf("state.db changed: %q", b)
	}
	// The rest of the workspace is writable.
	if _, err := w.WriteFileAtomic("src/ok.txt", []byte("x"), 0o644); err != nil {
		t.Error(err)
	}
}

// A workspace inside a server path is the server's too.
func TestWorkspaceInsideServerPath(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(filepath.Join(dir, "chains", "ws"), Options{ServerPaths: []tools.ServerPath{{Path: filepath.Join(dir, "chains"), What: "the server's chains folder"}}})
	must(t, err)
	defer w.Close()
	if _, err := w.WriteFileAtomic("x.json", []byte("{}"), 0o644); !errors.Is(err, tools.ErrServerPath) {
		t.Fatalf("write inside a workspace in the chains folder: %v", err)
	}
}

// A folder swapped for a symlink into a server path between the check and
// the use (a command running in parallel) is refused, not followed.
func TestServerPathsSwapAfterCheck(t *testing.T) {
	w, proj := serverWorkspace(t)
	must(t, os.MkdirAll(filepath.Join(proj, "src", "x"), 0o755))
	must(t, os.WriteFile(filepath.Join(proj, "src", "x", "state.db"), []byte("decoy"), 0o644))
	swap := func(target string) func() {
		return func() {
			must(t, os.RemoveAll(filepath.Join(proj, "src", "x")))
			must(t, os.Symlink(target, filepath.Join(proj, "src", "x")))
		}
	}
	w.checked = swap("../chains")
	if _, err := w.WriteFileAtomic("src/x/evil.json", []byte("{}"), 0o644); err == nil {
		t.Error("the write followed the swapped symlink")
	}
	if _, err := os.Lstat(filepath.Join(proj, "chains", "evil.json")); err == nil {
		t.Fatal("chains/evil.json was written through a folder swapped for a symlink")
	}
	must(t, os.Remove(filepath.Join(proj, "src", "x")))
	must(t, os.MkdirAll(filepath.Join(proj, "src", "x"), 0o755))
	must(t, os.WriteFile(filepath.Join(proj, "src", "x", "state.db"), []byte("decoy"), 0o644))
	w.checked = swap("../data")
	if _, b, err := w.ReadFile("src/x/state.db", 0); err == nil || strings.Contains(string(b), "secret") {
		t.Fatalf("the read followed the swapped symlink: %q, %v", b, err)
	}
	w.checked = nil
	// Unswapped, the same calls work.
	must(t, os.Remove(filepath.Join(proj, "src", "x")))
	if _, err := w.WriteFileAtomic("src/x/new.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, b, err := w.ReadFile("src/x/new.json", 0); err != nil || string(b) != "{}" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(filepath.Join(proj, "src", "x", "new.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
}
