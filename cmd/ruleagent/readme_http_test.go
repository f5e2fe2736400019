package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEHTTPSamples runs the sh blocks of the README's HTTP API
// section, as written, against `ruleagent serve` on a copy of chains/ and
// the README's model (see readmeModel), and checks what the README says
// they print: the `# ` comment lines after a command are its output (a
// comment line that starts with more spaces continues the line before;
// "..." is any text, a comment line "..." any lines; output of the
// commands before it that the README does not show is not checked).
func TestREADMEHTTPSamples(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("curl is needed to run the README's examples")
		}
		t.Skip("curl is not installed")
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(b)
	i := strings.Index(section, "\n## HTTP API\n")
	if i < 0 {
		t.Fatal("README.md has no HTTP API section")
	}
	section = section[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	model := readmeModel(t)
	dir := copyChains(t)
	t.Chdir(dir)
	model(t)
	p := &player{t: t}
	defer p.close()
	p.serve([]string{"serve", "--addr", "127.0.0.1:0", "--chains", "chains"})

	samples := 0
	for n, block := range strings.Split(section, "```sh\n")[1:] {
		block = block[:strings.Index(block, "```")]
		script, want := sampleScript(block)
		samples += len(want)
		script = "set -e -o pipefail\n" + strings.ReplaceAll(script, "127.0.0.1:8080", p.addr)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("HTTP API example %d failed: %v\n%s\noutput:\n%s", n+1, err, block, out)
			continue
		}
		got := strings.Split(string(out), sampleMark+"\n")
		for k, w := range want {
			lines := nonEmptyLines(got[k])
			if !matches(normalise(append([]string{"..."}, w...)), normalise(lines)) {
				t.Errorf("HTTP API example %d, sample %d: the command before\n%s\nprints:\n%s", n+1, k+1, strings.Join(w, "\n"), strings.Join(lines, "\n"))
			}
		}
	}
	if samples < 6 {
		t.Fatalf("only %d output samples in the HTTP API section", samples)
	}
}

const sampleMark = "@@README-SAMPLE@@"

// sampleScript replaces each group of `# ` comment lines of an sh block
// by a command printing a mark, and returns the script and the groups as
// expected output lines.
func sampleScript(block string) (string, [][]string) {
	var script strings.Builder
	var want [][]string
	var cur []string
	flush := func() {
		if cur != nil {
			want = append(want, cur)
			script.WriteString("echo '" + sampleMark + "'\n")
			cur = nil
		}
	}
	for _, l := range strings.Split(block, "\n") {
		text, isComment := strings.CutPrefix(l, "# ")
		if !isComment {
			flush()
			script.WriteString(l + "\n")
			continue
		}
		if strings.HasPrefix(text, " ") && len(cur) > 0 {
			cur[len(cur)-1] += strings.TrimLeft(text, " ")
			continue
		}
		cur = append(cur, text)
	}
	flush()
	return script.String(), want
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// copyChains makes a folder holding a copy of chains/, for a test to run
// commands in.
func copyChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "chains"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "chains", "*.json"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "chains", filepath.Base(f)), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
