package bash

import (
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/ruleagent/ruleagent/tools"
)

// start starts the command, confined when the tool's sandbox setting and
// the kernel allow, with stdout and stderr going to the given files.
func (t *Tool) start(command, dir, runID string, stdout, stderr *os.File) (process, error) {
	l, err := t.confinement()
	if err != nil {
		return nil, err
	}
	if l != nil {
		p, err := l.Start(sandboxCommand(t, command, dir, runID, stdout, stderr))
		if err != nil {
			return nil, tools.Wrap(tools.ErrExecutionFailed, err, "cannot run the command in the sandbox")
		}
		return confined{p}, nil
	}
	return startLocal(t.cfg.ShellPath, command, dir, t.env, stdout, stderr)
}

// local is a command this process started itself, unconfined.
type local struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	reaped bool
}

func startLocal(shell, command, dir string, env []string, stdout, stderr *os.File) (*local, error) {
	cmd := exec.Command(shell, "-c", command)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	if err := startInGroup(cmd); err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "cannot run the command")
	}
	if err := cmd.Start(); err != nil {
		return nil, tools.Wrap(tools.ErrExecutionFailed, err, "cannot start %s", shell)
	}
	return &local{cmd: cmd}, nil
}

func (l *local) wait() (syscall.WaitStatus, error) {
	pid := l.cmd.Process.Pid
	// Nothing outlives the call: when the shell exits, whatever it left
	// running in its process group is killed. Where the system allows,
	// this happens before the shell is reaped, so the group id is still
	// ours.
	waited := waitExited(pid)
	l.mu.Lock()
	if waited {
		_ = killGroup(pid)
	}
	l.reaped = true
	l.mu.Unlock()
	err := l.cmd.Wait()
	if !waited {
		_ = killGroup(pid)
	}
	ws, ok := l.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok {
		return ws, err
	}
	return ws, nil
}

func (l *local) kill() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.reaped {
		_ = killGroup(l.cmd.Process.Pid)
	}
}
