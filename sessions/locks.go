package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/state/lease"
)

// Lease is a held session lease (package state/lease): Release gives it
// back; Lost is closed when it ended without Release (its renewals
// failed, another process took it, the store closed), and the run holding
// it must then stop: its writes are refused with ErrLeaseLost.
type Lease = lease.Lease

// ErrLeaseLost refuses a write by a run whose session lease ended: another
// run may hold the session now.
var ErrLeaseLost = errors.New("the session's lease was lost: another run may hold the session now")

// acquire takes session id's lease from l, in the store's errors.
func acquire(ctx context.Context, l lease.Leaser, id string) (Lease, error) {
	x, err := l.Acquire(ctx, id)
	switch {
	case errors.Is(err, lease.ErrHeld):
		return nil, ErrBusy
	case errors.Is(err, lease.ErrClosed):
		return nil, ErrClosed
	case err != nil:
		return nil, err
	}
	return x, nil
}

// checkLocal refuses the write of a record fenced with a lease l no
// longer holds (released, or ended with the store).
func checkLocal(l *lease.Local, rec *Record) error {
	if rec.lease != nil && !l.Holds(rec.lease) {
		return fmt.Errorf("%w: %s is no longer held by this run", ErrLeaseLost, rec.lease.Name())
	}
	return nil
}
