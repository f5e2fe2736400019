// Package lease hands out leases: a named, exclusive hold that lasts while
// its holder renews it and ends by itself when the holder dies. A thread's
// run holds its thread's lease (package sessions); a replica holds its
// liveness lease (package health).
//
// Two implementations keep one contract (lease_test.go runs the same table
// against both):
//
//   - Local: in the process's memory, for one machine (the embedded
//     stores). A lease ends when it is released or the Leaser is closed;
//     a dead process holds nothing.
//   - Redis: shared by every replica of a fleet. A lease is a key with a
//     TTL (Options.TTL, 6 s by default) renewed every TTL/3 by one
//     goroutine per Leaser for all the leases it holds (one pipelined
//     round trip). A replica that dies releases its leases within TTL.
//
// A holder must treat its lease as lost as soon as Lost is closed, and
// stop, or checkpoint, what the lease protects. The Redis Leaser closes
// Lost when a renewal finds the key gone or taken (another holder has it)
// or when renewals have failed for 3/4 of the TTL (a frozen Redis, a
// network flap): the holder gives the lease up before Redis lets another
// replica take it. A flap shorter than about TTL/3 loses nothing.
//
// Fencing: every acquisition gets a token (Token) larger than every token
// handed out before, for any name, across processes and across a Redis
// restart that lost its data (the counter is seeded from Redis's clock). A
// store that records the token of the last writer, or checks the lease
// key holds the writer's token in the same atomic step as the write (as
// sessions' Redis store does), refuses a stale holder's write. Checking
// is what protects the data: between a Redis losing its data and the
// next renewal (TTL/3 at most), two holders may both believe they hold a
// lease; only the fenced write tells them apart.
package lease

import (
	"context"
	"errors"
	"time"
)

// Errors of leasers.
var (
	// ErrHeld: another holder has the lease.
	ErrHeld = errors.New("the lease is held by another holder")
	// ErrLost is the cause of a lost lease (Lease.Err).
	ErrLost = errors.New("the lease was lost")
	// ErrClosed: the Leaser was closed.
	ErrClosed = errors.New("the leaser is closed")
)

// DefaultTTL is a lease's life without renewal: how long a dead holder
// keeps what it held.
const DefaultTTL = 6 * time.Second

// Leaser hands out leases by name. Implementations are safe for
// concurrent use.
type Leaser interface {
	// Acquire takes the lease name, or fails at once with ErrHeld when
	// another holder has it. It never waits for a lease to be free.
	Acquire(ctx context.Context, name string) (Lease, error)
	// Close ends every lease it holds (their Lost is closed; Redis keys
	// are deleted) and stops its renewals.
	Close() error
}

// Lease is a held lease.
type Lease interface {
	// Name is the lease's name.
	Name() string
	// Token is the fencing token of this acquisition.
	Token() uint64
	// Lost is closed when the lease ends without Release: it expired,
	// another holder took it, or the Leaser was closed.
	Lost() <-chan struct{}
	// Err is nil while the lease is held, then why it ended (wrapping
	// ErrLost, or ErrClosed).
	Err() error
	// Release gives the lease up; it is safe to call more than once and
	// after the lease was lost.
	Release()
}

// Options configure a Leaser.
type Options struct {
	// TTL is how long a lease lives without renewal (DefaultTTL when 0);
	// it is renewed every TTL/3.
	TTL time.Duration
	// Owner names the holder in the lease's value, for people reading
	// Redis (a replica id).
	Owner string
}

func (o Options) ttl() time.Duration {
	if o.TTL <= 0 {
		return DefaultTTL
	}
	return o.TTL
}
