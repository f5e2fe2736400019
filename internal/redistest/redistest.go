// Package redistest starts a real redis-server (the Debian package) for
// tests, on 127.0.0.1 and a free port, with nothing written to disk, and
// stops it when the test ends. Without redis-server a test is skipped,
// except under CI (the CI variable set), where it fails: CI installs it.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running redis-server.
type Server struct {
	// Addr is host:port; URL is redis://Addr/0.
	Addr string
	URL  string
	cmd  *exec.Cmd
}

// Start starts a redis-server for t.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is missing: apt-get install -y --no-install-recommends redis-server"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port)}
	s.URL = "redis://" + s.Addr + "/0"
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--protected-mode", "yes", "--loglevel", "warning")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var logs strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &logs, &logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(10 * time.Second)
	for !s.ping() {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer on %s: %s", s.Addr, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// ping reports whether the server answers PING.
func (s *Server) ping() bool {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
