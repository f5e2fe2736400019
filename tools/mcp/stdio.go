package mcptool

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/ruleagent/ruleagent/tools/childenv"
)

// serverEnv is the environment of a stdio server: the allowlisted
// variables of this process, then the config's (see tools/childenv).
func serverEnv(extra map[string]string) []string { return childenv.Build(extra) }

const (
	// stderrKept bounds the server's stderr kept for error messages.
	stderrKept = 8 << 10
	// stderrShown is how much of it an error message quotes.
	stderrShown = 1000
	// stopGrace is how long stopping waits after closing the server's
	// stdin (the MCP way to ask a stdio server to exit), and again after
	// SIGTERM, before SIGKILL.
	stopGrace = time.Second
)

// process is a stdio server's child process: how it is started, what it
// says on stderr, and how it is stopped with everything it started.
type process struct {
	cmd    *exec.Cmd
	stderr tail
	// gone is closed when the server's stderr reaches end of file: the
	// server, and every process it started that shared its stderr, have
	// exited. It tells a dead server from a live one before a call fails.
	gone    chan struct{}
	rd, wr  *os.File
	stopped sync.Once
	// cleanup removes the sandbox's temporary directory, if any.
	cleanup func()
}

// newStdioTransport prepares the transport of a stdio server. The process
// starts when the client starts.
func newStdioTransport(t *target, opts ...transport.StdioOption) (*transport.Stdio, *process, error) {
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	p := &process{gone: make(chan struct{}), rd: rd, wr: wr, cleanup: func() {}}
	spawn := func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
		// Not CommandContext: the process must outlive the context of the
		// connection attempt that starts it.
		cmd := exec.Command(command, args...)
		cmd.Env = serverEnv(t.env)
		cmd.Dir = t.cwd
		if err := ensureDir(t); err != nil {
			return nil, err
		}
		// An *os.File, so the child writes to it directly: no copying
		// goroutine for Wait to wait for, and end of file tells us when
		// the server is gone.
		cmd.Stderr = wr
		inOwnGroup(cmd)
		cleanup, err := t.sandbox.confine(cmd, t.cwd)
		if err != nil {
			return nil, err
		}
		p.cleanup = cleanup
		p.cmd = cmd
		return cmd, nil
	}
	opts = append(opts, transport.WithCommandFunc(spawn))
	return transport.NewStdioWithOptions(t.command, nil, t.args, opts...), p, nil
}

// started is called once the client has started (or failed to start) the
// process: the parent's copy of the stderr pipe's write end is closed, so
// that end of file comes when the server's processes have all exited.
func (p *process) started(err error) {
	p.wr.Close()
	if err != nil || p.cmd == nil || p.cmd.Process == nil {
		p.rd.Close()
		close(p.gone)
		p.cleanup()
		return
	}
	go func() {
		defer close(p.gone)
		defer p.rd.Close()
		_, _ = io.Copy(&p.stderr, p.rd)
	}()
}

// alive reports whether the server's processes are still running.
func (p *process) alive() bool {
	select {
	case <-p.gone:
		return false
	default:
		return true
	}
}

// pid is the server's process id (0 before it started).
func (p *process) pid() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// stop ends the server and everything it started. closeClient closes the
// transport, which closes the server's stdin and reaps the process; stop
// escalates to SIGTERM and then SIGKILL for the whole process group while
// that takes too long, so it returns within a few seconds whatever the
// server does.
func (p *process) stop(closeClient func() error) {
	p.stopped.Do(func() {
		defer func() { p.cleanup() }()
		closed := make(chan struct{})
		go func() {
			_ = closeClient()
			close(closed)
		}()
		pid := p.pid()
		if pid == 0 {
			<-closed
			return
		}
		if !within(closed, stopGrace) {
			signalGroup(pid, false)
			if !within(closed, stopGrace) {
				signalGroup(pid, true)
				<-closed
			}
		}
		// The server has exited and been reaped; processes it started may
		// still hold its stderr. While one does, the group id cannot have
		// been reused, so killing the group hits only them.
		if !within(p.gone, 100*time.Millisecond) {
			signalGroup(pid, true)
			if !within(p.gone, stopGrace) {
				// A process that left the group holds the pipe: stop
				// reading it, so that no goroutine is left behind.
				p.rd.Close()
				<-p.gone
			}
		}
	})
}

// stderrTail is the end of what the server wrote on stderr, for messages.
func (p *process) stderrTail() string {
	s := strings.TrimSpace(p.stderr.String())
	if len(s) > stderrShown {
		s = "..." + s[len(s)-stderrShown:]
	}
	return s
}

func within(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// tail keeps the last stderrKept bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - stderrKept; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// describeStderr quotes the end of the server's stderr for an error
// message, which is where a stdio server explains why it failed.
func (p *process) describeStderr() string {
	if s := p.stderrTail(); s != "" {
		return " (the server's stderr: " + s + ")"
	}
	return ""
}

// ensureDir makes sure the server's working directory exists: the agent's
// workspace is created on first use, as the file tools create it; a cwd
// the config names must exist already. Without this, exec reports a
// missing directory as a missing program.
func ensureDir(t *target) error {
	if t.cwd == "" {
		return nil
	}
	fi, err := os.Stat(t.cwd)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("working directory %s is not a directory", t.cwd)
	case err == nil:
		return nil
	case os.IsNotExist(err) && !t.cwdGiven:
		return os.MkdirAll(t.cwd, 0o755)
	case os.IsNotExist(err):
		return fmt.Errorf("working directory %s (config cwd) does not exist", t.cwd)
	}
	return err
}
