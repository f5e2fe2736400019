package server

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
)

// conformanceDir is the conformance suite's package, relative to the
// repository root.
const conformanceDir = "test/peers/node_modules/@modelcontextprotocol/conformance"

// conformanceFixtures are chains named as the suite's fixture tools
// (test_simple_text, test_error_handling, test_tool_with_progress,
// json_schema_2020_12_tool). They are ordinary chains, loaded only by this
// test: the scenarios exercise the product's own code paths, and the
// product ships no fixture.
const conformanceFixtures = "testdata/mcp-conformance"

// conformanceBaseline lists the scenarios expected to fail, and why.
const conformanceBaseline = "testdata/mcp-conformance-baseline.yml"

// mustPass are the scenarios that apply to ruleagent. They must pass
// whatever the baseline says.
var mustPass = []string{
	"server-initialize", "ping", "tools-list",
	"tools-call-simple-text", "tools-call-error", "tools-call-with-progress",
	"json-schema-2020-12", "server-sse-multiple-streams", "dns-rebinding-protection",
}

// scenarioResult is one scenario's outcome in the suite's checks.json files.
type scenarioResult struct {
	name     string
	passed   bool
	failures []string
	warnings []string
}

// TestMCPConformance runs every server scenario of the official conformance
// suite (--suite all: the active ones, json-schema-2020-12 and the pending
// server-sse-polling) against /mcp of the real Handler, serving the test
// chains and the conformance fixture chains. Run it with -v for the result
// table.
func TestMCPConformance(t *testing.T) {
	needPeers(t)
	if _, err := os.Stat(filepath.Join(repoRoot, conformanceDir, "dist/index.js")); err != nil {
		needPeers(t) // same rule: skip, or fail under CI
		t.Fatalf("the conformance suite is missing from %s; install it with: npm ci --prefix test/peers", conformanceDir)
	}
	e := &mcpEnv{model: mcpModel(t), hang: newHangingModel(t), dir: mcpChains(t)}
	fixtures, _ := filepath.Glob(filepath.Join(conformanceFixtures, "*.json"))
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(e.dir, filepath.Base(f)), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStore(e.dir, NewConfig(e.globals(t)))
	t.Cleanup(e.store.Close)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	url := serveLoopback(t, Handler(Options{Store: e.store})) + "/mcp"

	out := t.TempDir()
	baseline, err := filepath.Abs(conformanceBaseline)
	if err != nil {
		t.Fatal(err)
	}
	args := append(nodeShim(t), filepath.Join(conformanceDir, "dist/index.js"),
		"server", "--url", url, "--suite", "all", "-o", out, "--expected-failures", baseline)
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = repoRoot
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	runErr := cmd.Run()

	results := readConformance(t, out)
	t.Logf("conformance results:\n%s", conformanceTable(results))
	if runErr != nil {
		t.Errorf("the suite disagrees with %s (%v):\n%s", conformanceBaseline, runErr, output.String())
	}
	byName := map[string]scenarioResult{}
	for _, r := range results {
		byName[r.name] = r
	}
	for _, name := range mustPass {
		if r, ok := byName[name]; !ok || !r.passed {
			t.Errorf("scenario %s did not pass: %q", name, r.failures)
		}
	}
}

// nodeShim is the node flag that lets the suite start on Node before 22,
// which lacks fs.globSync.
func nodeShim(t *testing.T) []string {
	t.Helper()
	v, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	major, _ := strconv.Atoi(regexp.MustCompile(`^v(\d+)`).FindStringSubmatch(strings.TrimSpace(string(v)))[1])
	if major >= 22 {
		return nil
	}
	return []string{"--import", "./test/peers/node20-shim.mjs"}
}

// readConformance reads every scenario's checks.json under out (the suite
// writes <out>/<scenario>-<timestamp>/checks.json).
func readConformance(t *testing.T, out string) []scenarioResult {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no checks.json under %s: %v", out, err)
	}
	stamp := regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T.*$`)
	var results []scenarioResult
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID           string `json:"id"`
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		dir := strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-")
		r := scenarioResult{name: stamp.ReplaceAllString(dir, ""), passed: true}
		for _, c := range checks {
			switch c.Status {
			case "FAILURE":
				r.passed = false
				r.failures = append(r.failures, c.ID+": "+c.ErrorMessage)
			case "WARNING":
				r.warnings = append(r.warnings, c.ID+": "+c.ErrorMessage)
			}
		}
		results = append(results, r)
	}
	slices.SortFunc(results, func(a, b scenarioResult) int { return strings.Compare(a.name, b.name) })
	return results
}

// conformanceTable formats results as a Markdown table for the README.
func conformanceTable(results []scenarioResult) string {
	var b strings.Builder
	b.WriteString("| scenario | result | note |\n|---|---|---|\n")
	for _, r := range results {
		status, note := "passed", strings.Join(r.warnings, "; ")
		if !r.passed {
			status, note = "failed", strings.Join(r.failures, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.name, status, strings.ReplaceAll(note, "|", "\\|"))
	}
	return b.String()
}
