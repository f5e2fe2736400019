// Package peers locates and starts the third-party protocol peers the
// tests run against: the npm packages installed in test/peers (the MCP
// reference servers, the SDK, the conformance suite, the AG-UI client) and
// the loopback-only preload in ../shared/tools beside the repository.
//
// When node or a package is missing a test is skipped with the command
// that installs it, except under CI (the CI variable set), where it fails:
// CI must always run the real peers.
package peers

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/proctest"
)

// Root returns the repository root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
}

// Bin returns test/peers/node_modules/.bin/name, skipping (or, under CI,
// failing) the test when node or the program is missing.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Root(t), "test", "peers", "node_modules", ".bin", name)
	Need(t, p)
	return p
}

// Loopback returns the preload that forces servers binding every
// interface onto 127.0.0.1 (../shared/tools/loopback-only.cjs).
func Loopback(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Root(t), "..", "shared", "tools", "loopback-only.cjs")
	Need(t, p)
	return p
}

// Need checks that node and the given files exist.
func Need(t testing.TB, files ...string) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("test peers missing (%v): run `npm ci --prefix test/peers` (and keep ../shared beside the repository)", missing)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// HTTPServer is an npm MCP server serving HTTP on a loopback port.
type HTTPServer struct {
	t    testing.TB
	args []string
	Port int
	cmd  *exec.Cmd
	out  *proctest.Buffer
}

// StartEverything starts @modelcontextprotocol/server-everything in mode
// (streamableHttp or sse) on a free loopback port, waits until it accepts
// connections, and kills its process group at cleanup.
func StartEverything(t testing.TB, mode string) *HTTPServer {
	t.Helper()
	h := &HTTPServer{t: t, Port: FreePort(t),
		args: []string{"--require", Loopback(t), Bin(t, "mcp-server-everything"), mode}}
	h.Start()
	t.Cleanup(h.Kill)
	return h
}

// Addr is the server's host:port.
func (h *HTTPServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", h.Port) }

// Start (re)starts the server on its port.
func (h *HTTPServer) Start() {
	h.t.Helper()
	h.out = &proctest.Buffer{}
	cmd := exec.Command("node", h.args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", h.Port))
	cmd.Stdout, cmd.Stderr = h.out, h.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.cmd = cmd
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", h.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			h.Kill()
			h.t.Fatalf("%v did not listen on %s: %s", h.args, h.Addr(), h.out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill ends the server and waits for it, so that its port is free again.
func (h *HTTPServer) Kill() {
	if h.cmd == nil {
		return
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	_ = h.cmd.Wait()
	h.cmd = nil
}

// Output is what the server printed.
func (h *HTTPServer) Output() string { return h.out.String() }

// RunScript runs test/peers/<script> with node, stdin as its input, and
// returns what it printed on stdout. A script that fails, or runs past
// timeout, fails the test with its stderr.
func RunScript(t testing.TB, script string, stdin []byte, timeout time.Duration, env ...string) []byte {
	t.Helper()
	path := filepath.Join(Root(t), "test", "peers", script)
	Need(t, path, filepath.Join(Root(t), "test", "peers", "node_modules", ".package-lock.json"))
	cmd := exec.Command("node", path)
	cmd.Dir = filepath.Join(Root(t), "test", "peers")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", script, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s failed: %v\n%s", script, err, stderr.String())
		}
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s ran longer than %s\nstdout: %.2000s\nstderr: %s", script, timeout, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}
