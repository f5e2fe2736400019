package agent

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Defaults of LLMConfig.FirstByteTimeout and IdleTimeout for agents (the
// node's firstByteTimeout and idleTimeout).
//
// A reasoning model may think for minutes before its answer starts, but
// providers that let it send its reasoning as it goes, or SSE keepalive
// comments (OpenRouter, Anthropic's pings), and either counts as life;
// two minutes of silence before anything of the answer is far past the
// first token of chat models (seconds) and of most reasoning ones, while
// leaving a stalled upstream (connection open, nothing sent) three
// attempts (maxRetries 2) within the run's ten minutes. Once tokens flow
// they come in seconds: a minute without a byte is a stall.
const (
	DefaultFirstByteTimeout = 120 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
)

// StallError is a streamed answer that went silent, the connection open:
// no byte at all (not even a keepalive) for After, before the answer
// started (Started false: FirstByteTimeout) or once it had (IdleTimeout).
// Before the answer started it is retried like a network failure; after,
// the run fails with it (as an LLMError).
type StallError struct {
	After   time.Duration
	Started bool
}

func (e *StallError) Error() string {
	if e.Started {
		return fmt.Sprintf("the answer stalled: nothing for %s after it started (idleTimeout)", e.After)
	}
	return fmt.Sprintf("no answer: nothing for %s before it started (firstByteTimeout)", e.After)
}

// stallWatch cancels a streamed request that stays silent too long. The
// silence allowed is first until the answer starts (its first delta: the
// headers, a role chunk and keepalives do not start it, but each resets
// the clock), idle after; 0 does not limit that phase.
type stallWatch struct {
	first, idle time.Duration
	cancel      context.CancelCauseFunc
	timer       *time.Timer
	started     atomic.Bool
}

// watchStalls returns ctx for the request and its watch, or ctx itself and
// nil when neither phase is limited.
func watchStalls(ctx context.Context, first, idle time.Duration) (context.Context, *stallWatch) {
	if first <= 0 && idle <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &stallWatch{first: first, idle: idle, cancel: cancel}
	w.timer = time.AfterFunc(max(first, 0), w.fire)
	if first <= 0 {
		w.timer.Stop()
	}
	return ctx, w
}

func (w *stallWatch) fire() {
	started := w.started.Load()
	after := w.first
	if started {
		after = w.idle
	}
	w.cancel(&StallError{After: after, Started: started})
}

// progress resets the clock: bytes came.
func (w *stallWatch) progress() {
	d := w.first
	if w.started.Load() {
		d = w.idle
	}
	if d <= 0 {
		w.timer.Stop()
		return
	}
	w.timer.Reset(d)
}

// answerStarted switches to the idle limit: the first delta came.
func (w *stallWatch) answerStarted() {
	w.started.Store(true)
	w.progress()
}

// err is the stall that cancelled the request, or nil.
func (w *stallWatch) err(ctx context.Context) error {
	if w == nil {
		return nil
	}
	if se, ok := context.Cause(ctx).(*StallError); ok {
		return se
	}
	return nil
}

// stop ends the watch (the request's context is cancelled by its owner).
func (w *stallWatch) stop() {
	if w != nil {
		w.timer.Stop()
	}
}

// body wraps a response body so that each read that brings bytes resets
// the clock.
func (w *stallWatch) body(r io.Reader) io.Reader {
	if w == nil {
		return r
	}
	return &stallReader{r: r, w: w}
}

type stallReader struct {
	r io.Reader
	w *stallWatch
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.w.progress()
	}
	return n, err
}
