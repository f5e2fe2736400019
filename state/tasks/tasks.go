// Package tasks keeps the state of MCP tasks (the io.modelcontextprotocol/tasks
// extension of protocol 2026-07-28): what a client polls with tasks/get, from
// whichever replica its request reaches. The replica that runs a task's chain
// writes its status, its questions and its result here; any replica reads
// them, and records a cancel or answers for the owner to pick up.
//
// Implementations (contract_test.go runs one table against all three):
//
//   - Memory: one process, nothing survives a restart.
//   - Bolt: a bucket in the server's state file under --data.
//   - Redis: a key per task (PREFIX task:{ID}, JSON, PEXPIREAT its expiry);
//     Update is an optimistic WATCH/MULTI transaction. Each write publishes
//     the task's id on PREFIX tasks:changed (see Changes).
//
// A task is kept until TTL after its last change, then it is gone (Get
// answers ErrNotFound), whatever its status.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Status is a task's status, as the extension names it.
type Status string

// The statuses of a task. The last three are terminal: a task that reached
// one never changes again.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is final.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Task is a stored task.
type Task struct {
	ID string `json:"id"`
	// Owner is the verified user who started it ("" where nobody is
	// verified); Session the MCP session it was started in ("" for a
	// stateless 2026-07-28 client). Only they may read or act on it.
	Owner   string `json:"owner,omitempty"`
	Session string `json:"session,omitempty"`
	// Tool is the tool called; Replica the replica running its chain.
	Tool    string `json:"tool"`
	Replica string `json:"replica"`

	Status  Status    `json:"status"`
	Message string    `json:"statusMessage,omitempty"`
	Created time.Time `json:"created"`
	// Updated is the last write (the store sets it, and keeps the task TTL
	// after it); Changed the last change of status the owner made, which
	// clients see as lastUpdatedAt; Alive the owner's last heartbeat.
	Updated time.Time `json:"updated"`
	Changed time.Time `json:"changed,omitzero"`
	Alive   time.Time `json:"alive,omitzero"`
	// TTL is how long the task is kept after its last change.
	TTL     time.Duration `json:"ttl"`
	Expires time.Time     `json:"expires"`

	// Result is the tool's result (a CallToolResult, JSON) of a completed
	// task; Error the JSON-RPC error ({code, message, data}) of a failed
	// one; InputRequests the questions of an input_required one, by key.
	Result        json.RawMessage `json:"result,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	// Responses are answers received by another replica (tasks/update),
	// by key, for the owner to deliver; CancelRequested a cancel received
	// by another replica, for the owner to stop the run.
	Responses       map[string]json.RawMessage `json:"responses,omitempty"`
	CancelRequested bool                       `json:"cancelRequested,omitempty"`
	// Paused names the checkpoint of an input_required task whose run
	// paused (no replica runs it): the replica that receives the last
	// answers claims it and goes on with the run.
	Paused string `json:"paused,omitempty"`
}

// Store keeps tasks. Implementations are safe for concurrent use.
type Store interface {
	// Create stores a new task (ErrExists if its id is taken). It sets
	// Expires from Updated and TTL.
	Create(ctx context.Context, t *Task) error
	// Get returns a task (ErrNotFound: none, or expired).
	Get(ctx context.Context, id string) (*Task, error)
	// Update changes a task in one atomic step: fn gets the stored task
	// and changes it (or returns an error, which Update returns and
	// nothing is stored). A terminal task is not changed: Update returns
	// it with ErrTerminal and does not call fn. Updated and Expires are
	// set from the clock.
	Update(ctx context.Context, id string, fn func(*Task) error) (*Task, error)
}

// Errors of stores.
var (
	ErrNotFound = errors.New("no such task (it never existed, or it expired)")
	ErrExists   = errors.New("a task with this id exists")
	ErrTerminal = errors.New("the task has ended")
)

// touch stamps a change at now.
func touch(t *Task, now time.Time) {
	t.Updated = now
	t.Expires = now.Add(t.TTL)
}

// created stamps a new task at now.
func created(t *Task, now time.Time) {
	t.Created, t.Changed = now, now
	touch(t, now)
}

// apply is Update's step on a decoded task, shared by the stores.
func apply(t *Task, now time.Time, fn func(*Task) error) error {
	if t.Status.Terminal() {
		return ErrTerminal
	}
	if err := fn(t); err != nil {
		return err
	}
	touch(t, now)
	return nil
}

// live reports whether a stored task is still kept at now.
func live(t *Task, now time.Time) bool { return now.Before(t.Expires) }
