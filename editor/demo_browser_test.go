package editor_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/editor"
)

// TestDemoGalleryInChromium is the first five minutes of a fresh clone:
// `ruleagent serve` on the shipped chains with no LLM configured, the
// editor opened in headless Debian Chromium, and each example chain run
// from the Run panel on the built-in demo model (browser/demo.mjs): its
// answer, its tool calls, its sub-agents, its approval; then the
// front-end tool page under /examples/.
func TestDemoGalleryInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	root := repoRoot(t)
	chromium, err := exec.LookPath("chromium")
	need(t, err == nil, "chromium is not installed: apt-get install -y --no-install-recommends chromium")
	_, err = os.Stat(filepath.Join(root, "editor", "node_modules", "playwright-core"))
	need(t, err == nil, "the editor's npm packages are missing: make editor")
	need(t, editor.Built(), "this binary holds no editor build: make editor, then go test")

	work := t.TempDir()
	chains := filepath.Join(work, "chains")
	if err := os.MkdirAll(chains, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "chains", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("chains/: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(chains, filepath.Base(f)), string(b))
	}
	bin := filepath.Join(t.TempDir(), "ruleagent")
	build := exec.Command("go", "build", "-o", bin, "./cmd/ruleagent")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	base, banner := serveWithoutLLM(t, bin, work, chains)
	if !strings.Contains(banner, "LLM: the built-in demo model") {
		t.Fatalf("the banner does not name the demo model:\n%s", banner)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	artefacts := filepath.Join(root, "editor", "test-artifacts", "demo")
	run := exec.CommandContext(ctx, "node", filepath.Join("browser", "demo.mjs"))
	run.Dir = filepath.Join(root, "editor")
	run.Env = append(os.Environ(), "BASE_URL="+base, "CHROMIUM="+chromium, "ARTEFACTS="+artefacts)
	out, err := run.CombinedOutput()
	t.Logf("browser tests (screenshots in %s):\n%s", artefacts, out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}

// serveWithoutLLM starts `ruleagent serve` with no LLM configured (every
// OPENAI_* and RULEAGENT_GLOBAL_* variable removed) on a free loopback
// port, and returns its URL and the banner up to it.
func serveWithoutLLM(t *testing.T, bin, dir, chains string) (string, string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--chains", chains, "--data", filepath.Join(dir, "data"))
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "RULEAGENT_GLOBAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, stderr := startServe(t, cmd)
	type banner struct{ url, text string }
	found := make(chan banner, 1)
	go func() {
		url := regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
		sc := bufio.NewScanner(stdout)
		var text strings.Builder
		var u string
		for sc.Scan() {
			text.WriteString(sc.Text() + "\n")
			if u == "" {
				u = url.FindString(sc.Text())
			}
			if strings.Contains(sc.Text(), "editor: ") {
				found <- banner{u, text.String()}
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case b := <-found:
		return b.url, b.text
	case <-time.After(30 * time.Second):
		t.Fatalf("ruleagent serve printed no banner; stderr:\n%s", stderr.String())
		return "", ""
	}
}
