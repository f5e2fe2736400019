package bash

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

// waitDelay bounds how long a call waits for output pipes once the shell
// is gone: a process that left the group (setsid) could otherwise hold them
// open for ever.
const waitDelay = time.Second

// run executes command with shellPath -c in dir. A non-zero exit is a
// result with IsError set; a timeout or a cancellation is an error that
// carries the output collected so far.
func (t *Tool) run(ctx context.Context, command, dir string, timeout time.Duration) (tools.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	stdout, stderr := newCapture(t.cfg.MaxOutputSize), newCapture(t.cfg.MaxOutputSize)
	// Never -l or -i: a login or interactive shell would read profile files
	// that can export the very secrets the environment leaves out.
	cmd := exec.CommandContext(ctx, t.cfg.ShellPath, "-c", command)
	cmd.Dir = dir
	cmd.Env = t.env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	if err := startInGroup(cmd); err != nil {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "cannot run the command")
	}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }

	start := time.Now()
	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return tools.Result{}, ctxError(ctx.Err(), timeout, 0, "")
		}
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "cannot start %s", t.cfg.ShellPath)
	}
	// Nothing outlives the call: when the shell exits, whatever it left
	// running in its process group is killed. Where the system allows,
	// this happens before the shell is reaped, so the group id is still
	// ours.
	waited := waitExited(cmd.Process.Pid)
	if waited {
		_ = killGroup(cmd.Process.Pid)
	}
	waitErr := cmd.Wait()
	if !waited {
		_ = killGroup(cmd.Process.Pid)
	}
	elapsed := time.Since(start)

	// A command that finished on its own just as time ran out still counts
	// as finished.
	if ctxErr := ctx.Err(); ctxErr != nil && waitErr != nil {
		return tools.Result{}, ctxError(ctxErr, timeout, elapsed, formatOutput(stdout, stderr))
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, waitErr, "running the command failed")
	}

	code := cmd.ProcessState.ExitCode()
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", code)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		fmt.Fprintf(&b, " (killed by signal %s)", ws.Signal())
	}
	fmt.Fprintf(&b, "\nduration: %s\n", elapsed.Round(time.Millisecond))
	if errors.Is(waitErr, exec.ErrWaitDelay) {
		b.WriteString("note: a process the command started outside its process group kept the output open; it was closed\n")
	}
	b.WriteString(formatOutput(stdout, stderr))
	return tools.Result{Text: b.String(), IsError: code != 0}, nil
}

// ctxError reports a command stopped by its deadline (ErrTimeout) or by the
// caller (context.Canceled), with the output it had produced.
func ctxError(ctxErr error, timeout, elapsed time.Duration, out string) error {
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return tools.Errorf(tools.ErrTimeout,
			"the command timed out after %s; it and every process it started were killed.\npartial output:\n%s", timeout, out)
	}
	return tools.Wrap(tools.ErrExecutionFailed, ctxErr,
		"the command was canceled after %s; it and every process it started were killed.\npartial output:\n%s", elapsed.Round(time.Millisecond), out)
}

func formatOutput(stdout, stderr *capture) string {
	section := func(name string, c *capture) string {
		s := c.String()
		if s == "" {
			return name + ": (empty)\n"
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		return name + ":\n" + s
	}
	return section("stdout", stdout) + section("stderr", stderr)
}
