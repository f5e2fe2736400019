package agent

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
)

const benchServerEnv = "RULEAGENT_BENCH_SERVER"

// TestMain doubles as the scripted LLM server of the benchmarks: run with
// RULEAGENT_BENCH_SERVER=1, the test binary serves benchScript, prints its
// URL and exits when its stdin closes. The benchmarks then measure the
// client's CPU only.
func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		srv, err := llmtest.Start(benchScript())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(srv.URL)
		_, _ = io.Copy(io.Discard, os.Stdin)
		srv.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// benchServer starts the scripted server in a child process.
func benchServer(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal("bench server:", err)
	}
	return strings.TrimSpace(line)
}
