package idempotency

import (
	"context"
	"errors"
)

// ErrTruncated is returned by Replay for an answer longer than the store
// keeps: its frames were not kept.
var ErrTruncated = errors.New("the first attempt's answer was longer than the server keeps")

// Respond records the answer's status and headers, before its frames.
func (e *Entry) Respond(status int, header map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.header = status, header
	e.wakeLocked()
}

// Frame appends one frame of the answer (a copy of b): the whole body, or
// one event of a stream.
func (e *Entry) Frame(b []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.truncated {
		return
	}
	if len(e.data)+len(b) > e.max {
		e.truncated, e.data, e.ends = true, nil, nil
	} else {
		e.data = append(e.data, b...)
		e.ends = append(e.ends, len(e.data))
	}
	e.wakeLocked()
}

// wakeLocked wakes the followers. The caller holds e.mu.
func (e *Entry) wakeLocked() {
	if e.wake != nil {
		close(e.wake)
		e.wake = nil
	}
}

// waitLocked returns what closes at the next change. The caller holds
// e.mu.
func (e *Entry) waitLocked() <-chan struct{} {
	if e.wake == nil {
		e.wake = make(chan struct{})
	}
	return e.wake
}

// Wait blocks until the first attempt has finished, or ctx ends.
func (e *Entry) Wait(ctx context.Context) error {
	return e.waitFor(ctx, func() bool { return e.finished })
}

// WaitResponse blocks until the first attempt has responded (Respond) or
// finished, or ctx ends.
func (e *Entry) WaitResponse(ctx context.Context) error {
	return e.waitFor(ctx, func() bool { return e.status != 0 || e.finished })
}

// waitFor blocks until done holds (checked under e.mu), or ctx ends.
func (e *Entry) waitFor(ctx context.Context, done func() bool) error {
	for {
		e.mu.Lock()
		if done() {
			e.mu.Unlock()
			return nil
		}
		wake := e.waitLocked()
		e.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Response returns the status and headers the first attempt answered with
// (status 0 before it did).
func (e *Entry) Response() (int, map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status, e.header
}

// Replay hands every frame to write, in order, following the first attempt
// while it runs, until it has finished and every frame was written. It
// returns ctx's error if ctx ends first, write's first error, or
// ErrTruncated when the frames were not kept.
func (e *Entry) Replay(ctx context.Context, write func([]byte) error) error {
	next := 0
	for {
		e.mu.Lock()
		if e.truncated {
			e.mu.Unlock()
			return ErrTruncated
		}
		if next < len(e.ends) {
			start := 0
			if next > 0 {
				start = e.ends[next-1]
			}
			// data only grows by append: the frame stays valid unlocked.
			frame := e.data[start:e.ends[next]:e.ends[next]]
			e.mu.Unlock()
			if err := write(frame); err != nil {
				return err
			}
			next++
			continue
		}
		if e.finished {
			e.mu.Unlock()
			return nil
		}
		wake := e.waitLocked()
		e.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
