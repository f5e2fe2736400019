package sessions

import (
	"context"
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/events"
)

// Snapshot is the Conversation of a run that paused (see agent.Suspension):
// what the run needs to keep its turn when it goes on, in this process or
// another, after its lease was given back. Resume takes the session again.
type Snapshot struct {
	Key Key `json:"key"`
	// Version is the session's version the run read (0: a new session):
	// the session must be unchanged when the run goes on.
	Version int64            `json:"version"`
	Base    []events.Message `json:"base"`
	Summary string           `json:"summary,omitempty"`
	Model   string           `json:"model,omitempty"`
}

// ErrMoved refuses to resume a run on a session written while it was
// paused: keeping its turn would lose what was written meanwhile.
var ErrMoved = errors.New("the session changed while the run was paused")

// Snapshot returns what the run needs to go on with the session after a
// pause. The caller releases the conversation afterwards.
func (c *Conversation) Snapshot() *Snapshot {
	r := &c.rec.Header
	return &Snapshot{Key: Key{Agent: r.Agent, Scope: r.Scope, User: r.UserID, Thread: r.ThreadID}, Version: c.rec.Version,
		Base: c.base, Summary: c.summary, Model: c.model}
}

// Resume takes the session of a paused run again (ErrBusy when another
// run holds it, ErrMoved when it was written since the run read it): the
// run then keeps its turn as it would have without the pause.
func Resume(ctx context.Context, store Store, cfg *Config, snap *Snapshot, run Run) (*Conversation, error) {
	id := snap.Key.ID()
	lease, err := store.Lock(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	rec, err := store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) && snap.Version == 0:
		rec, err = NewRecord(snap.Key), nil
	case errors.Is(err, ErrNotFound):
		err = ErrMoved
	case err == nil && rec.Version != snap.Version:
		err = ErrMoved
	}
	if err != nil {
		lease.Release()
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	rec.ChainID, rec.NodeID = run.ChainID, run.NodeID
	rec.Fence(lease)
	return &Conversation{store: store, cfg: cfg, lease: lease, rec: rec, runID: run.RunID, model: snap.Model,
		base: snap.Base, summary: snap.Summary}, nil
}
