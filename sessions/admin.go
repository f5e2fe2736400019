package sessions

import (
	"context"
	"errors"
	"time"
)

// Remove deletes a session, holding its lease: a session a run holds is
// ErrBusy, never pulled from under the run.
func Remove(ctx context.Context, store Store, id string) error {
	lease, err := store.Lock(ctx, id)
	if err != nil {
		return err
	}
	defer lease.Release()
	return store.Delete(ctx, id)
}

// SetModel sets the allowedModels entry a session runs on ("" for the
// agent's own model), creating the session when there is none; ttl
// restarts its idle time (0: none). The caller checks that the name is
// allowed. A session a run holds is ErrBusy. owner is the verified user
// asking ("" for the operator's token or an unverified caller): a thread
// session it creates is theirs, one another user started is ErrNotYours.
func SetModel(ctx context.Context, store Store, key Key, name string, ttl time.Duration, owner string) (*Record, error) {
	id := key.ID()
	lease, err := store.Lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	rec, err := store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		rec, err = NewRecord(key), nil
		if key.Scope == ScopeThread {
			rec.Owner = owner
		}
	}
	if err != nil {
		return nil, err
	}
	if err := rec.checkOwner(owner); err != nil {
		return nil, err
	}
	rec.Fence(lease)
	now := time.Now().UTC()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	rec.Model, rec.Updated, rec.Expires = name, now, time.Time{}
	if ttl > 0 {
		rec.Expires = now.Add(ttl)
	}
	if err := store.Put(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}
