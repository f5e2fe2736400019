// Package mcpconformance runs @modelcontextprotocol/conformance (installed
// in test/peers) against ruleagent's MCP server or client, and holds its
// results to a checked-in baseline: every check must pass, or be listed in
// the baseline with the reason it fails. A failure the baseline does not
// list fails the test, and so does a listed failure that now passes (the
// baseline is stale).
//
// The suite's own --expected-failures works per scenario; the baseline here
// names the failing checks, so that a new failure inside a scenario that
// already fails in part is caught too.
package mcpconformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ruleagent/ruleagent/internal/peers"
)

// suiteDir is the suite's package under the repository root.
const suiteDir = "test/peers/node_modules/@modelcontextprotocol/conformance"

// Check is one check of a scenario, as the suite wrote it.
type Check struct {
	ID      string `json:"id"`
	Status  string `json:"status"` // SUCCESS, FAILURE, WARNING, SKIPPED, INFO
	Message string `json:"errorMessage"`
}

// Scenario is a scenario's checks, and for a client scenario what the
// client printed.
type Scenario struct {
	Name   string
	Checks []Check
	Output string
}

// Failed lists the IDs of the scenario's failed checks.
func (s Scenario) Failed() []string {
	var ids []string
	for _, c := range s.Checks {
		if c.Status == "FAILURE" && !slices.Contains(ids, c.ID) {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Run runs the suite with args (a "server" or "client" command line, without
// the output directory) from the repository root, and returns what every
// scenario reported. The suite's exit code is not consulted: Compare judges
// the results. It skips (or, under CI, fails) when the suite is missing.
func Run(t *testing.T, timeout time.Duration, args ...string) []Scenario {
	t.Helper()
	root := peers.Root(t)
	entry := filepath.Join(root, suiteDir, "dist/index.js")
	peers.Need(t, entry)
	out := t.TempDir()
	cmdArgs := append(NodeShim(t), entry)
	cmdArgs = append(cmdArgs, args...)
	cmdArgs = append(cmdArgs, "-o", out)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", cmdArgs...)
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Run()
	results, rerr := read(out)
	if rerr != nil || len(results) == 0 {
		t.Fatalf("the conformance suite wrote no results (%v, %v):\n%s", err, rerr, output.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s:\n%s", timeout, output.String())
	}
	return results
}

// NodeShim is the node flag that lets the suite start on Node before 22,
// which lacks fs.globSync.
func NodeShim(t *testing.T) []string {
	t.Helper()
	v, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`^v(\d+)`).FindStringSubmatch(strings.TrimSpace(string(v))); m != nil {
		if major, _ := strconv.Atoi(m[1]); major >= 22 {
			return nil
		}
	}
	return []string{"--import", "./test/peers/node20-shim.mjs"}
}

// read reads every scenario's checks.json under out: the suite writes
// <out>/[server-]<scenario>-<timestamp>/checks.json, where a scenario such
// as auth/metadata-default makes a folder of its own.
func read(out string) ([]Scenario, error) {
	var files []string
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "checks.json" {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	stamp := regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T.*$`)
	var results []Scenario
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var checks []Check
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		rel, err := filepath.Rel(out, filepath.Dir(f))
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(filepath.ToSlash(rel), "server-")
		var output string
		for _, std := range []string{"stdout.txt", "stderr.txt"} {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(f), std)); err == nil {
				output += string(b)
			}
		}
		results = append(results, Scenario{Name: stamp.ReplaceAllString(name, ""), Checks: checks, Output: output})
	}
	slices.SortFunc(results, func(a, b Scenario) int { return strings.Compare(a.Name, b.Name) })
	return results, nil
}

// Baseline lists the checks expected to fail, by scenario, each scenario
// with the reason. A scenario's whole checks may be listed with "*".
type Baseline map[string]Expected

// Expected is one scenario's expected failures: Checks fail every time;
// Flaky may fail or pass (the reason says why they are not deterministic).
type Expected struct {
	Reason string   `yaml:"reason"`
	Checks []string `yaml:"checks"`
	Flaky  []string `yaml:"flaky"`
}

// LoadBaseline reads a baseline file: a YAML map of scenario to
// {reason, checks}.
func LoadBaseline(t *testing.T, path string) Baseline {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var bl Baseline
	if err := yaml.Unmarshal(b, &bl); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for name, e := range bl {
		if strings.TrimSpace(e.Reason) == "" || len(e.Checks)+len(e.Flaky) == 0 {
			t.Fatalf("%s: %s needs a reason and the checks that fail", path, name)
		}
	}
	return bl
}

// Compare lists what disagrees with the baseline: failed checks it does not
// list, checks it lists that did not fail, and scenarios it lists that did
// not run.
func Compare(results []Scenario, bl Baseline) []string {
	var problems []string
	ran := map[string]bool{}
	for _, s := range results {
		ran[s.Name] = true
		exp := bl[s.Name]
		failed := s.Failed()
		for _, c := range s.Checks {
			if c.Status == "FAILURE" && !slices.Contains(exp.Checks, c.ID) && !slices.Contains(exp.Checks, "*") && !slices.Contains(exp.Flaky, c.ID) {
				p := fmt.Sprintf("%s: %s failed: %s", s.Name, c.ID, c.Message)
				if out := strings.TrimSpace(s.Output); out != "" {
					p += "\n\tthe client printed: " + strings.ReplaceAll(truncate(out, 2000), "\n", "\n\t")
				}
				problems = append(problems, p)
			}
		}
		for _, id := range exp.Checks {
			if id != "*" && !slices.Contains(failed, id) {
				problems = append(problems, fmt.Sprintf("%s: %s is in the baseline but did not fail: remove it", s.Name, id))
			}
		}
		if slices.Contains(exp.Checks, "*") && len(failed) == 0 {
			problems = append(problems, fmt.Sprintf("%s is in the baseline but passed: remove it", s.Name))
		}
	}
	for name := range bl {
		if !ran[name] {
			problems = append(problems, fmt.Sprintf("%s is in the baseline but did not run", name))
		}
	}
	slices.Sort(problems)
	return problems
}

// Table formats results as a Markdown table for the README: each scenario,
// its checks passed out of those run, and the baseline's reason for the
// others.
func Table(results []Scenario, bl Baseline) string {
	var b strings.Builder
	b.WriteString("| scenario | checks passed | note |\n|---|---|---|\n")
	for _, s := range results {
		passed, scored := 0, 0
		var warned []string
		for _, c := range s.Checks {
			switch c.Status {
			case "SUCCESS":
				passed++
				scored++
			case "WARNING":
				scored++
				warned = append(warned, c.ID)
			case "FAILURE":
				scored++
			}
		}
		note := ""
		if e, ok := bl[s.Name]; ok {
			note = strings.Join(strings.Fields(e.Reason), " ")
		}
		if len(warned) > 0 {
			note = strings.TrimSpace(note + " Warnings (SHOULD): " + strings.Join(warned, ", ") + ".")
		}
		fmt.Fprintf(&b, "| %s | %d/%d | %s |\n", s.Name, passed, scored, strings.ReplaceAll(note, "|", "\\|"))
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
