// Package redistest starts a real redis-server (the Debian package) for
// tests, on 127.0.0.1 and a free port, and stops it when the test ends.
// Without redis-server a test is skipped, except under CI (the CI variable
// set), where it fails: CI installs it.
//
// A Server can be frozen (SIGSTOP, as a stalled host or a long GC pause
// looks to its clients), killed and restarted on the same port, so that
// tests can show what a fleet does when its Redis fails. By default
// nothing is written to disk, so a restart empties it; Options.Persist
// keeps an append-only file synced on every write, so a restart keeps
// every acknowledged write.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running redis-server.
type Server struct {
	// Addr is host:port; URL is redis://Addr/0.
	Addr string
	URL  string

	bin, dir string
	port     int
	opts     Options

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	frozen bool
	logs   *strings.Builder
}

// Options configure a Server.
type Options struct {
	// Persist keeps an append-only file (appendfsync always) in the
	// server's folder, so that Restart keeps the data.
	Persist bool
}

// Start starts a redis-server for t that keeps nothing on disk.
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith starts a redis-server for t.
func StartWith(t testing.TB, o Options) *Server {
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
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), bin: bin, dir: t.TempDir(), port: port, opts: o}
	s.URL = "redis://" + s.Addr + "/0"
	t.Cleanup(s.stop)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *Server) start() error {
	args := []string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--dir", s.dir, "--protected-mode", "yes", "--loglevel", "warning"}
	if s.opts.Persist {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done, s.logs, s.frozen = cmd, done, logs, false
	s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for !s.ping() {
		select {
		case <-done:
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer on %s: %s", s.Addr, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
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

// Freeze stops the server's process (SIGSTOP): connections stay open and
// nothing answers, as with a stalled host. Thaw resumes it.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGSTOP, true)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw(t testing.TB) {
	t.Helper()
	s.signal(t, syscall.SIGCONT, false)
}

// FreezeFor freezes the server for d, then thaws it.
func (s *Server) FreezeFor(t testing.TB, d time.Duration) {
	t.Helper()
	s.Freeze(t)
	time.Sleep(d)
	s.Thaw(t)
}

func (s *Server) signal(t testing.TB, sig syscall.Signal, frozen bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	s.frozen = frozen
}

// Kill kills the server (SIGKILL), as a crash: what it did not persist is
// gone. Start brings it back on the same port.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	_ = cmd.Process.Kill()
	<-done
}

// Start starts a server that was killed again, on the same port and
// folder.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// Restart kills the server and starts it again on the same port (with
// Persist, the data survives).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill(t)
	s.Start(t)
}

func (s *Server) stop() {
	s.mu.Lock()
	cmd, done, frozen := s.cmd, s.done, s.frozen
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	if frozen {
		_ = cmd.Process.Signal(syscall.SIGCONT)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// Fleet skips t unless the slow fleet tests were asked for
// (RULEAGENT_TEST_FLEET=1, which `make test-fleet` sets): tests that wait
// out multi-second leases or freeze Redis for seconds run there, so that
// `make test` stays fast.
func Fleet(t testing.TB) {
	t.Helper()
	if os.Getenv("RULEAGENT_TEST_FLEET") == "" {
		t.Skip("a slow fleet test: run it with make test-fleet (RULEAGENT_TEST_FLEET=1)")
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
