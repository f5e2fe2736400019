package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// selfAgent is an agent whose workspace is the server's own directory
// (".", where serve finds chains/ and data/), with the file tools and a
// bash that may run interpreters.
const selfAgent = `{
  "ruleChain": {"id": "self"},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "configuration": {
    "url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}", "maxStep": 30,
    "workspace": ".",
    "tools": [{"type": "builtin", "name": "read"}, {"type": "builtin", "name": "write"}, {"type": "builtin", "name": "edit"},
      {"type": "builtin", "name": "bash", "config": {"interpreters": "on"}}]}}], "connections": []}
}`

const evilChain = `{"ruleChain": {"id": "evil"}, "metadata": {"nodes": [{"id": "n", "type": "log", "configuration": {}}], "connections": []}}`

// selfAttack is what the scripted model tries, one call a turn: write a
// chain into the watched folder, change the chain that runs, by the file
// tools and by bash (redirection, cp, mv, links, a command the shell
// parser cannot see, a script written first), write into the data
// directory, read its databases.
func selfAttack() []llmtest.ToolCall {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return []llmtest.ToolCall{
		llmtest.Call("write", `{"path":"chains/evil.json","content":`+q(evilChain)+`}`),
		llmtest.Call("write", `{"path":"evil.json","content":`+q(evilChain)+`}`),
		llmtest.Call("edit", `{"operation":"search","path":"chains/self.json","search":"\"maxStep\": 30","replace":"\"maxStep\": 31"}`),
		llmtest.Call("bash", `{"command":"echo '{}' > chains/evil.json"}`),
		llmtest.Call("bash", `{"command":"cp evil.json chains/evil.json"}`),
		llmtest.Call("bash", `{"command":"mv evil.json chains/evil.json"}`),
		llmtest.Call("bash", `{"command":"ln -s ../evil.json chains/evil.json"}`),
		llmtest.Call("bash", `{"command":"sh -c \"$(printf 'cp evil.json chains/%s' evil.json)\""}`),
		llmtest.Call("write", `{"path":"attack.sh","content":"cp evil.json chains/evil.json\nsed -i s/30/31/ chains/self.json\n"}`),
		llmtest.Call("bash", `{"command":"sh attack.sh"}`),
		llmtest.Call("bash", `{"command":"perl -e 'open(F, \">chains/evil.json\") or die \"$!\"; print F \"{}\"'"}`),
		llmtest.Call("write", `{"path":"data/evil","content":"x"}`),
		llmtest.Call("bash", `{"command":"echo x > data/evil"}`),
		llmtest.Call("read", `{"operation":"file","path":"data/sessions.db"}`),
		llmtest.Call("bash", `{"command":"d=data; cat \"$d/sessions.db\" | wc -c"}`),
		// Ordinary work goes on: a folder the write tool made after the
		// first command is the commands' to write.
		llmtest.Call("write", `{"path":"work/note.txt","content":"one\n"}`),
		llmtest.Call("bash", `{"command":"echo two >> work/note.txt && cat work/note.txt && grep -c maxStep chains/self.json"}`),
	}
}

func TestServeKeepsItsOwnPathsFromAgents(t *testing.T) {
	if st := sandbox.Describe(); !st.Available {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must run this test, but the kernel cannot confine commands: %s", st.Reason)
		}
		t.Skipf("the kernel cannot confine commands here: %s", st.Reason)
	}
	proj := selfProject(t)
	calls := selfAttack()
	turns := make([]llmtest.Response, 0, len(calls)+1)
	for _, c := range calls {
		turns = append(turns, llmtest.Calls(c))
	}
	srv := llmtest.NewServer(t, llmtest.Sequence(append(turns, llmtest.Reply("done"))...))
	setLLM(t, srv.URL)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, _, logs, exit := serve(t, ctx, "--chains", "chains", "--data", "data")
	chainsBefore := snapshot(t, filepath.Join(proj, "chains"))
	resp, err := http.Post("http://"+addr+"/api/v1/chains/self/run", "application/json", strings.NewReader(`{"input":"take over"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Data string }
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans.Data != "done" {
		t.Fatalf("answer %q: %s", ans.Data, logs)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	var results []string
	for _, m := range last.Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != len(calls) {
		t.Fatalf("%d tool results for %d calls", len(results), len(calls))
	}
	for i, c := range calls {
		res := results[i]
		t.Logf("call %d %s %s:\n%s", i, c.Name, c.Arguments, res)
		switch {
		case c.Name == "write" && !strings.HasPrefix(pathArg(c.Arguments), "chains/") && !strings.HasPrefix(pathArg(c.Arguments), "data/"):
			// The workspace's own files are the agent's to write.
			if strings.Contains(res, "permission denied") {
				t.Errorf("call %d %s %s refused: %s", i, c.Name, c.Arguments, res)
			}
		case c.Name == "bash" && strings.Contains(c.Arguments, "work/"):
			if !strings.Contains(res, "one\ntwo\n1\n") {
				t.Errorf("ordinary work failed:\n%s", res)
			}
		case c.Name == "bash" && (strings.Contains(c.Arguments, "attack.sh") || strings.Contains(c.Arguments, "perl")):
			// The policy cannot see into these: they run, and the
			// kernel refuses.
			if !strings.Contains(res, "exit code") || !strings.Contains(res, "Permission denied") {
				t.Errorf("call %d bash %s: no refusal by the kernel:\n%s", i, c.Arguments, res)
			}
		case c.Name == "bash":
			if !strings.Contains(res, "ermission denied") && !strings.Contains(res, "Read-only") {
				t.Errorf("call %d bash %s: no refusal by the kernel:\n%s", i, c.Arguments, res)
			}
			if strings.Contains(c.Arguments, "wc -c") && !strings.Contains(res, "\n0\n") {
				t.Errorf("bash read data/sessions.db:\n%s", res)
			}
		default:
			// As the README shows it.
			want := "permission denied: " + pathArg(c.Arguments) + " is in the server's chains folder, which agents may read but not change; agents change chains with the save_rule_chain tool, which checks what they may deploy"
			if strings.Contains(c.Arguments, "data/") {
				want = "permission denied: " + pathArg(c.Arguments) + " is in the server's data directory"
			}
			if !strings.Contains(res, "permission denied") || !strings.Contains(res, want) {
				t.Errorf("call %d %s %s: want %q, got:\n%s", i, c.Name, c.Arguments, want, res)
			}
		}
	}
	// Nothing changed in the chains folder or the data directory, and
	// the watcher deployed nothing: give it time to notice a file.
	time.Sleep(1500 * time.Millisecond)
	if after := snapshot(t, filepath.Join(proj, "chains")); !equalSnapshots(chainsBefore, after) {
		t.Errorf("the chains folder changed:\nbefore %v\nafter  %v", chainsBefore, after)
	}
	if _, err := os.Lstat(filepath.Join(proj, "data", "evil")); err == nil {
		t.Error("data/evil was written")
	}
	for _, id := range []string{"evil"} {
		r, err := http.Get("http://" + addr + "/api/v1/chains/" + id)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("chain %s: status %d, want 404 (deployed by an agent)", id, r.StatusCode)
		}
	}
	stop()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, logs)
	}
}

// pathArg is the path argument of a file tool's call.
func pathArg(args string) string {
	var a struct{ Path string }
	_ = json.Unmarshal([]byte(args), &a)
	return a.Path
}

// snapshot maps each file under dir to its contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Type()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			out[p] = "-> " + target
			return nil
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalSnapshots(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// ruleagent run hands its own paths to the agents it runs the same way:
// the chains folder it loads from, and its data directory.
func TestRunKeepsItsOwnPathsFromAgents(t *testing.T) {
	proj := selfProject(t)
	srv := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("write", `{"path":"chains/evil.json","content":`+mustQuote(evilChain)+`}`)),
		llmtest.Calls(llmtest.Call("write", `{"path":"data/evil","content":"x"}`)),
		llmtest.Reply("done")))
	setLLM(t, srv.URL)
	var out, errb strings.Builder
	if code := run(context.Background(), []string{"run", "self", "--input", "take over"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var results []string
	for _, m := range srv.LastRequest().Messages {
		if m.Role == "tool" {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "permission denied: chains/evil.json is in the server's chains folder") ||
		!strings.Contains(results[1], "permission denied: data/evil is in the server's data directory") {
		t.Fatalf("tool results %q", results)
	}
	for _, f := range []string{"chains/evil.json", "data/evil"} {
		if _, err := os.Lstat(filepath.Join(proj, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

func mustQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// selfProject makes a project folder (chains/ holding the self agent,
// data/) and makes it the working directory, as a user's would be.
func selfProject(t *testing.T) string {
	t.Helper()
	proj := t.TempDir()
	for _, d := range []string{"chains", "data"} {
		if err := os.Mkdir(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "chains", "self.json"), []byte(selfAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(proj)
	return proj
}
