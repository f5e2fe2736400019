// Package eventlog keeps each run's events, with ids, so that a client can
// rejoin a run (SSE Last-Event-ID) from any replica and get what it missed,
// then the live events, and so that a finished run can be read again
// (replay, the editor after a reload).
//
// The owner of a run (the replica running it) appends each encoded event
// to the run's Writer as it is emitted; Append copies the bytes into the
// run's pending batch and returns the event's id at once. Ids are 1, 2, 3
// ... per run, consecutive: a follower that sees an id jump knows events
// were dropped (trimmed by the bounds, or lost while the store was down)
// and can say so. A background flusher writes the pending batches of every
// run every Options.FlushInterval, in one transaction (bbolt) or one
// pipeline (Redis), so the hot path costs a copy and no I/O, and a burst
// of chunks costs one store write.
//
// Follow yields a run's stored events after an id, then the live ones,
// and returns after the last event once the run has ended (End). A
// follower on another replica sees an event about FlushInterval (100 ms by
// default) plus a round trip after it was appended; the run's own client
// reads the run directly and is not delayed.
//
// Bounds: a run keeps at most MaxEvents events and MaxBytes bytes (the
// oldest go first, approximately), a run is kept Retention after it ended
// and MaxAge at most while it runs (an owner that died without ending its
// run leaves nothing forever). While the store is unreachable, a run's
// pending events are kept up to MaxBytes, then dropped (their ids
// skipped) and counted in Writer.Err.
//
// Implementations (contract_test.go runs one table against both):
//
//   - Bolt: the embedded store, in a bbolt file (the server's --data
//     state file), with an in-memory tail so that followers on the same
//     machine see events before they are flushed.
//   - Redis: a stream per run (XADD with explicit ids, trimmed by MINID),
//     a hash of its Meta, and a sorted set of the fleet's runs. Followers
//     on a replica share one blocking XREAD connection.
//
// Cost (bench_test.go, 2 cores, loopback Redis): Append is 20-100 ns and
// allocates nothing; a whole run's log (start, 46 events, end, 16 runs at
// a time) costs about 10 Redis commands, of which the events are one
// pipelined XADD per flush, and 65-105 µs of wall time per run with
// Redis, 100-160 µs with bbolt. A follower on another replica gets an
// event FlushInterval plus about 1.5 ms after it was appended (102 ms at
// the default 100 ms, 11.5 ms at 10 ms); a follower in the owner's process
// (bbolt) within 30 µs, from the in-memory tail.
//
// The bbolt database should be opened with a generous InitialMmapSize
// (64 MiB): each remap as the file grows makes bbolt copy every node of a
// commit.
//
// What the server does with it (the integration): the run's events are
// encoded once (events.Event.AppendJSON) and appended to its Writer from
// the run's sink; the SSE writers put the returned id in each frame's
// `id:` line; GET /api/v1/runs/{id}/events follows the log from
// Last-Event-ID or ?after=; the runs listing is List; End is called with
// the run's outcome right after its terminal event; a run that pauses
// calls SetStatus(StatusWaiting) and Detach (its last events are stored
// before its checkpoint can be claimed), and its resumer Continue: the
// ids go on, none given twice, whichever replica answers and however
// soon.
package eventlog

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Meta describes a run in the fleet's listing.
type Meta struct {
	RunID string `json:"runId"`
	// Owner is the replica running it (or that ran it last).
	Owner    string `json:"owner"`
	ChainID  string `json:"chainId,omitempty"`
	ThreadID string `json:"threadId,omitempty"`
	UserID   string `json:"userId,omitempty"`
	Source   string `json:"source,omitempty"`
	// Status is StatusRunning, StatusWaiting, or once ended the outcome
	// given to End (success, error, cancelled, ...).
	Status    string    `json:"status"`
	StartedAt time.Time `json:"startedAt"`
	EndedAt   time.Time `json:"endedAt,omitzero"`
}

// Ended reports whether the run has ended.
func (m *Meta) Ended() bool { return !m.EndedAt.IsZero() }

// Run statuses before the end.
const (
	StatusRunning = "running"
	StatusWaiting = "waiting"
)

// Entry is one stored event. Data is valid only until the iteration goes
// on (the follower reuses its buffer): copy it to keep it.
type Entry struct {
	ID   uint64
	Data []byte
}

// Filter selects runs in List; empty fields match any.
type Filter struct {
	Owner    string
	ChainID  string
	ThreadID string
	UserID   string
	// Live: only runs that have not ended.
	Live bool
	// Limit caps the answer (0: none); the most recently started first.
	Limit int
}

func (f *Filter) match(m *Meta) bool {
	return (f.Owner == "" || f.Owner == m.Owner) && (f.ChainID == "" || f.ChainID == m.ChainID) &&
		(f.ThreadID == "" || f.ThreadID == m.ThreadID) && (f.UserID == "" || f.UserID == m.UserID) &&
		(!f.Live || !m.Ended())
}

// Log keeps the runs' event logs. Implementations are safe for concurrent
// use.
type Log interface {
	// Start opens the log of a new run as its owner (meta.Owner); a run id
	// that has a log already is ErrExists.
	Start(ctx context.Context, meta Meta) (Writer, error)
	// Continue reopens the log of a run that has not ended for owner:
	// appends go on after its last stored id. from is the owner the caller
	// takes it from ("" for any: the caller holds the run's checkpoint
	// claim); another owner is ErrOwned. A resumed paused run and a
	// replica ending a dead replica's run use it.
	Continue(ctx context.Context, runID, from, owner string) (Writer, error)
	// Follow yields the run's events with ids above after, in order, then
	// its live ones, and returns once the run has ended and every event is
	// yielded. Errors are yielded once, then it returns: ErrNotFound (no
	// such run, or it expired), ctx's error, or the store's.
	Follow(ctx context.Context, runID string, after uint64) iter.Seq2[Entry, error]
	// Meta returns a run's description.
	Meta(ctx context.Context, runID string) (Meta, error)
	// List returns the runs the filter selects, most recently started
	// first.
	List(ctx context.Context, f Filter) ([]Meta, error)
	// Close flushes what is pending and stops the flusher; writers still
	// open stop writing.
	Close() error
}

// Writer appends one run's events. Append is for one goroutine at a time
// (the run's event stream serialises its events); the others are safe
// with it.
type Writer interface {
	// Append copies data (one encoded event) into the run's log and
	// returns its id. It does no I/O.
	Append(data []byte) uint64
	// SetStatus records StatusRunning or StatusWaiting in the run's Meta.
	SetStatus(ctx context.Context, status string) error
	// End writes what is pending, marks the run ended with status (its
	// outcome) and starts its retention. Followers return after the last
	// event. Append after End is ignored (id 0).
	End(ctx context.Context, status string) error
	// Detach writes what is pending now, before it returns, and lets the
	// run's log go without ending it: a run that paused hands its log to
	// whoever goes on with it, in this process or on another replica
	// (Continue, after the last id this writer gave). Append, SetStatus
	// and End do nothing after it, and the writer holds nothing in the
	// process. On failure the pending events stay with the flusher (they
	// are written when the store is back) and the error says why.
	Detach(ctx context.Context) error
	// Err reports the first failure to store the run's events since the
	// last call (nil: everything appended so far is stored or pending).
	Err() error
}

// Errors of logs.
var (
	ErrNotFound = errors.New("no such run log (unknown, or expired)")
	ErrExists   = errors.New("the run has a log already")
	ErrOwned    = errors.New("the run is owned by another replica")
	ErrEnded    = errors.New("the run has ended")
	ErrClosed   = errors.New("the event log is closed")
	// ErrDropped is reported by Writer.Err when events were dropped (the
	// store was unreachable longer than the pending bound allows).
	ErrDropped = errors.New("events were dropped: the store was unreachable")
)

// Options bound the logs.
type Options struct {
	// FlushInterval is how long appended events may wait before they are
	// written (100 ms when 0): the delay a follower on another replica
	// sees, and the coalescing window of a burst.
	FlushInterval time.Duration
	// MaxEvents and MaxBytes bound one run's log (10,000 events and 8 MiB
	// when 0); the oldest events go first.
	MaxEvents int
	MaxBytes  int
	// Retention is how long a run's log is kept after it ended (1 h when
	// 0); MaxAge how long while it has not (24 h when 0).
	Retention time.Duration
	MaxAge    time.Duration
}

func (o Options) fill() Options {
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = 10000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 8 << 20
	}
	if o.Retention <= 0 {
		o.Retention = time.Hour
	}
	if o.MaxAge <= 0 {
		o.MaxAge = 24 * time.Hour
	}
	return o
}
