package bash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ruleagent/ruleagent/tools"
)

// waitDelay bounds how long a call waits for output pipes once the shell
// is gone: a process that left the group (setsid) could otherwise hold them
// open for ever.
const waitDelay = time.Second

// process is a started command, confined or not: both kinds are run,
// timed out, killed and captured the same way.
type process interface {
	// wait waits for the shell to exit, kills what it left running in its
	// process group, reaps it and returns how it ended.
	wait() (syscall.WaitStatus, error)
	// kill kills the process group now.
	kill()
}

// run executes command with shellPath -c in dir. A non-zero exit is a
// result with IsError set; a timeout or a cancellation is an error that
// carries the output collected so far.
func (t *Tool) run(ctx context.Context, command, dir, runID string, timeout time.Duration) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, ctxError(err, timeout, 0, "")
	}
	stdout, stderr := newCapture(t.cfg.MaxOutputSize), newCapture(t.cfg.MaxOutputSize)
	outR, outW, err := os.Pipe()
	if err != nil {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "cannot run the command")
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, err, "cannot run the command")
	}
	// Never -l or -i: a login or interactive shell would read profile files
	// that can export the very secrets the environment leaves out. The
	// timeout starts once the command has: the sandbox helper's start-up
	// (once per tool) and a run's ruleset (once per run) are not the
	// command's time.
	proc, err := t.start(command, dir, runID, outW, errW)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return tools.Result{}, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	outDone, errDone := drain(stdout, outR), drain(stderr, errR)
	stop := context.AfterFunc(ctx, proc.kill)
	ws, waitErr := proc.wait()
	stop()
	// Output written by processes that left the group may keep the pipes
	// open; wait a little, then stop reading.
	heldOpen := false
	timer := time.NewTimer(waitDelay)
	for _, done := range []chan struct{}{outDone, errDone} {
		select {
		case <-done:
		case <-timer.C:
			heldOpen = true
			outR.Close()
			errR.Close()
			<-done
		}
	}
	timer.Stop()
	outR.Close()
	errR.Close()
	elapsed := time.Since(start)
	if waitErr != nil {
		return tools.Result{}, tools.Wrap(tools.ErrExecutionFailed, waitErr, "running the command failed")
	}

	// A command that finished on its own just as time ran out still counts
	// as finished.
	success := ws.Exited() && ws.ExitStatus() == 0
	if ctxErr := ctx.Err(); ctxErr != nil && !success {
		return tools.Result{}, ctxError(ctxErr, timeout, elapsed, formatOutput(stdout, stderr))
	}
	code := ws.ExitStatus()
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d", code)
	if ws.Signaled() {
		fmt.Fprintf(&b, " (killed by signal %s)", ws.Signal())
	}
	fmt.Fprintf(&b, "\nduration: %s\n", elapsed.Round(time.Millisecond))
	if heldOpen {
		b.WriteString("note: a process the command started outside its process group kept the output open; it was closed\n")
	}
	b.WriteString(formatOutput(stdout, stderr))
	return tools.Result{Text: b.String(), IsError: code != 0}, nil
}

// drain copies r into c until r ends or is closed.
func drain(c *capture, r *os.File) chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(c, r)
	}()
	return done
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
