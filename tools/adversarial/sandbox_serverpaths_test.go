package adversarial_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/internal/testhooks"
)

// The server's own paths (its chains folder, its data directory) stay
// unwritable by bash commands, and the data directory unreadable, even
// when the tool's workspace is the project directory that holds them and
// the command policy is bypassed: Landlock grants the workspace around
// them.

const dataSecret = "SESSIONDB-SECRET-7f3a"

type serverProject struct {
	dir, chains, data string
	paths             []tools.ServerPath
}

func newServerProject(t *testing.T) serverProject {
	t.Helper()
	dir := t.TempDir()
	p := serverProject{dir: dir, chains: filepath.Join(dir, "chains"), data: filepath.Join(dir, "data")}
	for _, d := range []string{p.chains, p.data, filepath.Join(dir, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(p.chains, "agent.json"):  `{"ruleChain":{"id":"agent"}}`,
		filepath.Join(p.data, "state.db"):      dataSecret,
		filepath.Join(p.data, "keys"):          dataSecret,
		filepath.Join(dir, "notes.txt"):        "notes\n",
		filepath.Join(dir, "src", "evil.json"): `{"ruleChain":{"id":"evil"}}`,
	}
	for f, content := range files {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p.paths = []tools.ServerPath{
		{Path: p.chains, What: "the server's chains folder", Hint: "agents change chains with save_rule_chain"},
		{Path: p.data, What: "the server's data directory", Secret: true},
	}
	return p
}

func (p serverProject) bashTool(t *testing.T, config map[string]any) tools.Tool {
	t.Helper()
	def, _ := tools.Builtins.Lookup("bash")
	raw, _ := json.Marshal(config)
	tool, err := def.New(tools.BuildContext{ServerPaths: p.paths}, raw)
	if err != nil {
		t.Fatalf("bash config %s: %v", raw, err)
	}
	t.Cleanup(func() { tool.(interface{ Close() error }).Close() })
	return tool
}

// hostileToServerPaths write into the chains folder or the data directory,
// or read the data directory, by every route: redirection, cp, mv, links,
// replacing the folder, a command the parser cannot see (built by printf,
// or written to a script first), an interpreter.
var hostileToServerPaths = []string{
	"echo '{}' > chains/evil.json",
	"cp src/evil.json chains/evil.json",
	"mv src/evil.json chains/",
	"ln -s ../src/evil.json chains/evil.json",
	"ln src/evil.json chains/evil.json",
	"echo '{}' >> chains/agent.json",
	"echo '{}' > chains/agent.json",
	"rm -f chains/agent.json",
	"mv chains/agent.json src/",
	"mv chains chains.old && mkdir chains && cp src/evil.json chains/",
	"rm -rf chains",
	"ln -s chains src/c && echo '{}' > src/c/evil.json",
	"cd src && ln -s ../chains c2 && cp evil.json c2/",
	`sh -c "$(printf 'echo {} > chains/%s' evil.json)"`,
	"printf 'cp src/evil.json chains/evil.json\\n' > src/run.sh && sh src/run.sh",
	`python3 -c "open('chains/evil.json','w').write('{}')"`,
	`perl -e 'open(F, ">chains/evil.json"); print F "{}"'`,
	"echo x > data/evil",
	"echo x >> data/state.db",
	"rm -rf data",
	"mv data data.old",
	"cat data/state.db data/keys",
	"grep -r SESSIONDB .",
	"tar cf - data 2>/dev/null | tar xOf -",
	"cp -r data src/copy; cat src/copy/*",
}

func TestKernelKeepsServerPathsFromBash(t *testing.T) {
	requireSandbox(t)
	p := newServerProject(t)
	before := snapshot(t, p.dir)
	tool := p.bashTool(t, map[string]any{"workDir": p.dir, "interpreters": "on"})
	testhooks.DisableBashPolicy(t, tool)
	for _, cmd := range hostileToServerPaths {
		raw, _ := json.Marshal(map[string]any{"command": cmd + "; echo end"})
		res, err := tool.Call(t.Context(), raw)
		if err != nil && !errors.Is(err, tools.ErrTimeout) {
			t.Errorf("%q: the tool failed instead of running it: %v", cmd, err)
			continue
		}
		if !strings.Contains(res.Text, "end") {
			t.Errorf("%q did not run:\n%s", cmd, res.Text)
		}
		if strings.Contains(res.Text, dataSecret) {
			t.Errorf("%q read the data directory:\n%s", cmd, res.Text)
		}
	}
	after := snapshot(t, p.dir)
	for path, was := range before {
		if inServerPath(p, path) && after[path] != was {
			t.Errorf("changed or removed: %s (%q, was %q)", path, after[path], was)
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok && inServerPath(p, path) {
			t.Errorf("created: %s", path)
		}
	}
	// The rest of the project is the commands' to change, and the
	// chains readable.
	raw, _ := json.Marshal(map[string]any{"command": "cat chains/agent.json && echo more >> notes.txt && mkdir -p src/new && echo ok > src/new/f && cat src/new/f notes.txt"})
	res, err := tool.Call(t.Context(), raw)
	if err != nil || !strings.Contains(res.Text, `"agent"`) || !strings.Contains(res.Text, "ok") || !strings.Contains(res.Text, "more") {
		t.Errorf("ordinary work in the project failed: %v\n%s", err, res.Text)
	}
}

// A sandboxWrite tree above the chains folder is carved the same way.
func TestKernelKeepsServerPathsFromSandboxWrite(t *testing.T) {
	requireSandbox(t)
	p := newServerProject(t)
	ws := filepath.Join(p.dir, "src")
	tool := p.bashTool(t, map[string]any{"workDir": ws, "sandboxWrite": []string{p.dir}})
	testhooks.DisableBashPolicy(t, tool)
	for _, cmd := range []string{"echo '{}' > ../chains/evil.json", "cp evil.json ../chains/", "echo x > ../data/evil", "cat ../data/keys"} {
		raw, _ := json.Marshal(map[string]any{"command": cmd + "; echo end"})
		res, err := tool.Call(t.Context(), raw)
		if err != nil || !strings.Contains(res.Text, "end") || strings.Contains(res.Text, dataSecret) {
			t.Errorf("%q: %v\n%s", cmd, err, res.Text)
		}
	}
	for _, f := range []string{filepath.Join(p.chains, "evil.json"), filepath.Join(p.data, "evil")} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	raw, _ := json.Marshal(map[string]any{"command": "echo ok > ../notes.txt && cat ../notes.txt"})
	if res, err := tool.Call(t.Context(), raw); err != nil || !strings.Contains(res.Text, "ok") {
		t.Errorf("writing elsewhere in sandboxWrite failed: %v\n%s", err, res.Text)
	}
}

func inServerPath(p serverProject, path string) bool {
	for _, sp := range p.paths {
		if sp.Covers(path) {
			return true
		}
	}
	return false
}
