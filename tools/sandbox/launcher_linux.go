package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Launcher starts confined commands through one helper process, started
// on first use and restarted if it dies. It is safe for concurrent use.
type Launcher struct {
	spec Spec

	mu     sync.Mutex
	h      *helperProc
	closed bool
	facts  facts
}

type helperProc struct {
	cmd  *exec.Cmd
	conn *net.UnixConn
	done chan struct{}
}

// NewLauncher returns a launcher for spec. spec.TmpRoot must be a private
// directory; Close removes it.
func NewLauncher(spec Spec) *Launcher { return &Launcher{spec: spec} }

// startTimeout bounds the helper's start-up.
const startTimeout = 10 * time.Second

func (l *Launcher) helper() (*helperProc, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("the sandbox launcher is closed")
	}
	if l.h != nil {
		select {
		case <-l.h.done:
			l.h = nil // it died: start another
		default:
			return l.h, nil
		}
	}
	spec := l.spec
	spec.Withheld = systemWithheld()
	h, f, err := startHelper(&spec)
	if err != nil {
		return nil, err
	}
	l.h, l.facts = h, f
	return h, nil
}

func startHelper(spec *Spec) (*helperProc, facts, error) {
	var f facts
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, f, fmt.Errorf("sandbox helper: %w", err)
	}
	parent, child := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control")
	defer child.Close()
	specR, specW, err := os.Pipe()
	if err != nil {
		parent.Close()
		return nil, f, err
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{"ruleagent-sandbox-helper"},
		Env:        []string{helperEnv + "=1", "PATH=" + os.Getenv("PATH")},
		ExtraFiles: []*os.File{child, specR},
		// Its own process group: killing a command's group never hits it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if spec.Namespaces {
		inNamespaces(cmd, spec.privateNetwork())
	}
	err = cmd.Start()
	specR.Close()
	if err != nil {
		specW.Close()
		parent.Close()
		return nil, f, fmt.Errorf("sandbox helper: %w", err)
	}
	go func() {
		_ = json.NewEncoder(specW).Encode(spec)
		specW.Close()
	}()
	c, err := net.FileConn(parent)
	parent.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, f, err
	}
	conn := c.(*net.UnixConn)
	h := &helperProc{cmd: cmd, conn: conn, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(h.done)
	}()
	buf := make([]byte, 64<<10)
	_ = conn.SetReadDeadline(time.Now().Add(startTimeout))
	n, err := conn.Read(buf)
	_ = conn.SetReadDeadline(time.Time{})
	if err == nil {
		err = json.Unmarshal(buf[:n], &f)
	}
	if err == nil && f.Error != "" {
		err = errors.New(f.Error)
	}
	if err != nil {
		conn.Close()
		_ = cmd.Process.Kill()
		<-h.done
		return nil, f, fmt.Errorf("sandbox helper: %w", err)
	}
	return h, f, nil
}

// Facts describes what the helper set up (after the first Start).
func (l *Launcher) Facts() (noexec, netns bool, hidden, exposed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.facts.NoExec, l.facts.NetNS, l.facts.Hidden, l.facts.Exposed
}

// Command is one command for Start.
type Command struct {
	Path string
	Args []string
	Dir  string
	Env  []string
	// Run names the run; commands of one run share a private temporary
	// directory.
	Run string
	// Stdout and Stderr receive the output; Start does not close them.
	Stdout, Stderr *os.File
}

// Process is a confined command that has started.
type Process struct {
	Pid  int
	conn *net.UnixConn
}

// Start starts a confined command in its own process group. Its standard
// input is /dev/null.
func (l *Launcher) Start(c Command) (*Process, error) {
	h, err := l.helper()
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	local, remote := os.NewFile(uintptr(fds[0]), "command"), fds[1]
	b, _ := json.Marshal(request{Path: c.Path, Args: c.Args, Dir: c.Dir, Env: c.Env, Run: c.Run})
	rights := unix.UnixRights(remote, int(c.Stdout.Fd()), int(c.Stderr.Fd()))
	_, _, err = h.conn.WriteMsgUnix(b, rights, nil)
	unix.Close(remote)
	if err != nil {
		local.Close()
		return nil, fmt.Errorf("sandbox helper: %w", err)
	}
	cc, err := net.FileConn(local)
	local.Close()
	if err != nil {
		return nil, err
	}
	p := &Process{conn: cc.(*net.UnixConn)}
	r, err := p.read()
	switch {
	case err != nil:
		p.conn.Close()
		return nil, fmt.Errorf("sandbox helper: %w", err)
	case r.Error != "":
		p.conn.Close()
		return nil, fmt.Errorf("cannot start a confined command: %s", r.Error)
	}
	p.Pid = r.Pid
	return p, nil
}

func (p *Process) read() (reply, error) {
	buf := make([]byte, 4096)
	n, err := p.conn.Read(buf)
	if err != nil {
		return reply{}, err
	}
	var r reply
	return r, json.Unmarshal(buf[:n], &r)
}

// Wait waits until the command has exited, kills what it left running in
// its process group, and returns how it ended.
func (p *Process) Wait() (syscall.WaitStatus, error) {
	defer p.conn.Close()
	r, err := p.read()
	if err != nil {
		return 0, fmt.Errorf("lost the sandbox helper: %w", err)
	}
	if r.Status == nil {
		return 0, errors.New("the sandbox helper sent no exit status")
	}
	return syscall.WaitStatus(*r.Status), nil
}

// Kill kills the command's process group.
func (p *Process) Kill() { _, _ = p.conn.Write([]byte{'k'}) }

// Close stops the helper, which kills every command still running, and
// removes the temporary directories.
func (l *Launcher) Close() error {
	l.mu.Lock()
	l.closed = true
	h := l.h
	l.h = nil
	l.mu.Unlock()
	if h != nil {
		h.conn.Close()
		select {
		case <-h.done:
		case <-time.After(5 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	}
	return os.RemoveAll(l.spec.TmpRoot)
}
