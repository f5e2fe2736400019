package lease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Local is the in-process Leaser of one machine.
type Local struct {
	mu     sync.Mutex
	held   map[string]*localLease
	closed bool
	// fence seeds tokens from the clock, so that tokens keep growing across
	// restarts of the process.
	fence atomic.Uint64
}

// NewLocal returns an empty in-process Leaser.
func NewLocal() *Local {
	l := &Local{held: map[string]*localLease{}}
	l.fence.Store(uint64(time.Now().UnixMicro()))
	return l
}

// Acquire implements Leaser.
func (l *Local) Acquire(_ context.Context, name string) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.held[name] != nil {
		return nil, ErrHeld
	}
	x := &localLease{l: l, name: name, token: l.fence.Add(1), lost: make(chan struct{})}
	l.held[name] = x
	return x, nil
}

// Close implements Leaser.
func (l *Local) Close() error {
	l.mu.Lock()
	all := l.held
	l.held, l.closed = map[string]*localLease{}, true
	l.mu.Unlock()
	for _, x := range all {
		x.end(ErrClosed)
	}
	return nil
}

type localLease struct {
	l     *Local
	name  string
	token uint64
	lost  chan struct{}

	mu   sync.Mutex
	err  error
	done bool
}

func (x *localLease) Name() string          { return x.name }
func (x *localLease) Token() uint64         { return x.token }
func (x *localLease) Lost() <-chan struct{} { return x.lost }

func (x *localLease) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// end marks the lease ended with err (nil: released), once.
func (x *localLease) end(err error) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return false
	}
	x.done = true
	if err != nil {
		x.err = fmt.Errorf("lease %s: %w", x.name, err)
		close(x.lost)
	}
	return true
}

func (x *localLease) Release() {
	if !x.end(nil) {
		return
	}
	x.l.mu.Lock()
	if x.l.held[x.name] == x {
		delete(x.l.held, x.name)
	}
	x.l.mu.Unlock()
}

// Holds reports whether l is a lease of this Leaser still held: not
// released, not lost. A store's fenced write checks it under its own
// lock.
func (l *Local) Holds(x Lease) bool {
	lx, ok := x.(*localLease)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[lx.name] == lx
}
