package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// interrupted is the cause of a context that a signal ended: Ctrl+C
// (SIGINT) or SIGTERM. It is context.Canceled for errors.Is, as the
// standard library's own signal cause is.
type interrupted struct{ sig os.Signal }

func (e *interrupted) Error() string        { return e.sig.String() + " signal received" }
func (e *interrupted) Is(target error) bool { return target == context.Canceled }

// exitCode is the shell's convention for a process ended by a signal.
func (e *interrupted) exitCode() int {
	if s, ok := e.sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitFailure
}

// byUser says, for a person, why the command stopped.
func (e *interrupted) byUser() string {
	switch e.sig {
	case os.Interrupt:
		return "cancelled by the user (Ctrl+C)"
	case syscall.SIGTERM:
		return "stopped (SIGTERM)"
	}
	return "stopped (" + e.sig.String() + ")"
}

// notifyContext is signal.NotifyContext whose cause says which signal
// ended it (an *interrupted), so that a command can tell Ctrl+C apart.
func notifyContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			cancel(&interrupted{sig: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(context.Canceled)
	}
}

// signalled returns the signal that ended err's run, if one did.
func signalled(err error) (*interrupted, bool) {
	var in *interrupted
	ok := errors.As(err, &in)
	return in, ok
}
