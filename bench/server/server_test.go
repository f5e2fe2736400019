package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientSmoke builds ruleagent and runs every scenario of the load
// client small (the fleet scenario starts a redis-server): each stream
// must be complete and well-formed, none lost.
// It checks the client, not figures (nothing here is timed). make bench
// checks every stream of the real run the same way.
func TestClientSmoke(t *testing.T) {
	if os.Getenv("BENCH_SMOKE") == "" {
		t.Skip("builds the ruleagent binary and runs for about a minute: set BENCH_SMOKE=1")
	}
	dir := t.TempDir()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the binaries: %v", err)
	}
	for pkg, out := range map[string]string{"../../cmd/ruleagent": "ruleagent", ".": "server"} {
		if b, err := exec.Command(goCmd, "build", "-o", filepath.Join(dir, out), pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(dir, "server"), "-bin", filepath.Join(dir, "ruleagent"), "-quick")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"BenchmarkServerRunOverhead/agui 1 ", "BenchmarkServerRunOverhead/openai 1 ", "BenchmarkServerTokenLatency/agui 1 ",
		"BenchmarkServerStreams/n=20 1 ", " 0 lost ", "BenchmarkServerThroughput/gomaxprocs=2 1 ", "BenchmarkServerStartup/chains=3 1 ", "BenchmarkFleetThroughput/replicas=3 1 "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("no %q in:\n%s", want, stdout.String())
		}
	}
}
