// Package checkpoint keeps paused runs. A run that pauses (an approval, a
// form, a front-end tool, an MCP input_required) is a checkpoint, not a
// goroutine: its State, saved here, is all the engine needs to go on, on
// any replica, after any restart.
//
// Exactly one replica resumes a checkpoint: Claim is atomic, and it
// succeeds only when nobody holds the checkpoint or its holder is dead
// (its liveness heartbeat expired, package health). This is what makes "a
// second answer gets 409" hold across a fleet: the second claimant gets
// ErrClaimed. Every Save, Claim and Release gives the checkpoint a new
// fence (a number that only grows, seeded from the clock so that it keeps
// growing across a store that lost its data); Save, Release and Delete
// must present the fence their caller got, so a replica that lost the
// checkpoint to another (it was presumed dead) cannot overwrite or delete
// it (ErrFenced).
//
// The life of a pause, as the server runs it:
//
//  1. The run pauses on replica A: Save(State, Holder A, Fence 0). A keeps
//     the run's goroutine waiting, for a fast answer on A.
//  2. An answer reaches A (directly, or through package control from
//     another replica): A goes on in-process and, when the run ends,
//     Delete(fence); or it pauses again: Save(new State, fence).
//  3. A drains (SIGTERM) or its goroutine's wait is over: Release(fence)
//     hands the checkpoint to the fleet (Holder "").
//  4. An answer reaches B while A is dead or has released it: B Claims it
//     (one claimant wins), decodes the State and resumes the run from it;
//     the event log is continued with eventlog.Log.Continue.
//
// Implementations (contract_test.go runs one table against all):
//
//   - Memory: in the process, for a host without a data folder (tests,
//     embedding, `ruleagent run`); gone with the process.
//   - Bolt: a bucket in the server's state file under --data; a
//     checkpoint survives a restart; holders are alive while the
//     registry says so (the process itself: a checkpoint held by the
//     previous process is claimable after a restart).
//   - Redis: a hash per run and a sorted set for lists; Claim checks the
//     holder's heartbeat key in the same script.
package checkpoint

import (
	"context"
	"errors"
	"time"
)

// Checkpoint is a stored pause.
type Checkpoint struct {
	RunID string `json:"runId"`
	// ThreadID and Owner are the run's thread and the verified user who
	// started it, listed without the Data: which threads wait, and for
	// whom (an AG-UI thread with a paused run refuses new input).
	ThreadID string `json:"threadId,omitempty"`
	Owner    string `json:"owner,omitempty"`
	// Data is the encoded State (Encode).
	Data []byte `json:"-"`
	// Holder is the replica that holds it, "" when any may claim it.
	Holder string `json:"holder"`
	// Fence is the holder's proof: Save, Release and Delete present it.
	Fence uint64    `json:"fence"`
	Saved time.Time `json:"saved"`
	// Expires is when the checkpoint goes (zero: when deleted). A pause
	// should outlive its interrupts' expiry, so that a replica can resume
	// the run with their timeouts.
	Expires time.Time `json:"expires,omitzero"`
}

// Store keeps checkpoints. Implementations are safe for concurrent use.
type Store interface {
	// Save stores cp.RunID's checkpoint, held by cp.Holder. cp.Fence is
	// the fence the caller has: 0 for a run's first pause (ErrExists if
	// the run has one), else the fence its last Save or Claim returned
	// (another is ErrFenced). On success cp.Fence and cp.Saved are set.
	Save(ctx context.Context, cp *Checkpoint) error
	// Load returns a run's checkpoint (ErrNotFound: none, or expired).
	Load(ctx context.Context, runID string) (*Checkpoint, error)
	// Claim makes replica the holder and returns the checkpoint with its
	// new fence. It fails with ErrClaimed while a live replica holds it,
	// replica itself included: two answers racing on one replica get one
	// claim (the holder goes on without claiming).
	Claim(ctx context.Context, runID, replica string) (*Checkpoint, error)
	// Release hands the checkpoint to the fleet (no holder).
	Release(ctx context.Context, runID string, fence uint64) error
	// Delete removes the checkpoint (the run ended).
	Delete(ctx context.Context, runID string, fence uint64) error
	// List returns every checkpoint without its Data, oldest first.
	List(ctx context.Context) ([]Checkpoint, error)
}

// Errors of stores.
var (
	ErrNotFound = errors.New("no such checkpoint (unknown, resumed, or expired)")
	ErrExists   = errors.New("the run has a checkpoint already")
	ErrClaimed  = errors.New("the checkpoint is held by another replica")
	// ErrUnavailable wraps what a store that failed answered (a server
	// answers 503).
	ErrUnavailable = errors.New("the paused runs' store failed")
	ErrFenced      = errors.New("the checkpoint changed hands: this holder's fence is stale")
)

// Alive reports whether a replica is alive (health.Registry.Alive).
type Alive func(ctx context.Context, replica string) (bool, error)
