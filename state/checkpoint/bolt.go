package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt keeps checkpoints in a bbolt database the caller opens (the
// server's state file) and closes. Layout: bucket checkpoints, run id ->
// record JSON (the Checkpoint and its Data). Each change is one synced
// transaction.
type Bolt struct {
	db    *bolt.DB
	alive Alive
	now   func() time.Time

	mu    sync.Mutex
	swept time.Time
}

var bucket = []byte("checkpoints")

// record is a stored checkpoint.
type record struct {
	Checkpoint
	Data []byte `json:"data"`
}

// NewBolt returns the store in db, creating its bucket. alive tells which
// holders still live (the local registry: only this process).
func NewBolt(db *bolt.DB, alive Alive) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoints: %w", err)
	}
	return &Bolt{db: db, alive: alive, now: time.Now}, nil
}

func (s *Bolt) get(tx *bolt.Tx, runID string) (*record, bool) {
	v := tx.Bucket(bucket).Get([]byte(runID))
	var r record
	if v == nil || json.Unmarshal(v, &r) != nil {
		return nil, false
	}
	if !r.Expires.IsZero() && !s.now().Before(r.Expires) {
		return nil, false
	}
	return &r, true
}

func (s *Bolt) put(tx *bolt.Tx, r *record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put([]byte(r.RunID), b)
}

// nextFence is the fence after f (a new checkpoint's is seeded from the
// clock).
func (s *Bolt) nextFence(f uint64) uint64 {
	return max(f+1, uint64(s.now().UnixMicro()))
}

// Save implements Store.
func (s *Bolt) Save(_ context.Context, cp *Checkpoint) error {
	now := s.now().UTC()
	var fence uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		cur, ok := s.get(tx, cp.RunID)
		switch {
		case cp.Fence == 0 && ok:
			return ErrExists
		case cp.Fence != 0 && !ok:
			return ErrNotFound
		case cp.Fence != 0 && cur.Fence != cp.Fence:
			return ErrFenced
		}
		if ok {
			fence = s.nextFence(cur.Fence)
		} else {
			fence = s.nextFence(0)
		}
		r := &record{Checkpoint: *cp, Data: cp.Data}
		r.Fence, r.Saved = fence, now
		return s.put(tx, r)
	})
	if err != nil {
		return err
	}
	cp.Fence, cp.Saved = fence, now
	s.sweep()
	return nil
}

// Load implements Store.
func (s *Bolt) Load(_ context.Context, runID string) (*Checkpoint, error) {
	var out *Checkpoint
	_ = s.db.View(func(tx *bolt.Tx) error {
		if r, ok := s.get(tx, runID); ok {
			r.Checkpoint.Data = r.Data
			out = &r.Checkpoint
		}
		return nil
	})
	if out == nil {
		return nil, ErrNotFound
	}
	return out, nil
}

// Claim implements Store.
func (s *Bolt) Claim(ctx context.Context, runID, replica string) (*Checkpoint, error) {
	var out *Checkpoint
	err := s.db.Update(func(tx *bolt.Tx) error {
		r, ok := s.get(tx, runID)
		if !ok {
			return ErrNotFound
		}
		if r.Holder != "" {
			alive, err := s.alive(ctx, r.Holder)
			if err != nil {
				return err
			}
			if alive {
				return fmt.Errorf("%w: %s", ErrClaimed, r.Holder)
			}
		}
		r.Holder, r.Fence = replica, s.nextFence(r.Fence)
		if err := s.put(tx, r); err != nil {
			return err
		}
		r.Checkpoint.Data = r.Data
		out = &r.Checkpoint
		return nil
	})
	return out, err
}

// change applies fn to the checkpoint of runID if fence is its fence.
func (s *Bolt) change(runID string, fence uint64, fn func(tx *bolt.Tx, r *record) error) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		r, ok := s.get(tx, runID)
		switch {
		case !ok:
			return ErrNotFound
		case r.Fence != fence:
			return ErrFenced
		}
		return fn(tx, r)
	})
}

// Release implements Store.
func (s *Bolt) Release(_ context.Context, runID string, fence uint64) error {
	return s.change(runID, fence, func(tx *bolt.Tx, r *record) error {
		r.Holder, r.Fence = "", s.nextFence(r.Fence)
		return s.put(tx, r)
	})
}

// Delete implements Store.
func (s *Bolt) Delete(_ context.Context, runID string, fence uint64) error {
	return s.change(runID, fence, func(tx *bolt.Tx, _ *record) error {
		return tx.Bucket(bucket).Delete([]byte(runID))
	})
}

// List implements Store.
func (s *Bolt) List(context.Context) ([]Checkpoint, error) {
	var out []Checkpoint
	now := s.now()
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			var r record
			if json.Unmarshal(v, &r) == nil && (r.Expires.IsZero() || now.Before(r.Expires)) {
				out = append(out, r.Checkpoint)
			}
			return nil
		})
	})
	slices.SortFunc(out, func(a, b Checkpoint) int { return a.Saved.Compare(b.Saved) })
	return out, err
}

// sweep removes expired checkpoints, at most once a minute.
func (s *Bolt) sweep() {
	now := s.now()
	s.mu.Lock()
	due := now.Sub(s.swept) > time.Minute
	if due {
		s.swept = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	_ = s.db.Update(func(tx *bolt.Tx) error {
		var dead [][]byte
		_ = tx.Bucket(bucket).ForEach(func(k, v []byte) error {
			var r record
			if json.Unmarshal(v, &r) != nil || (!r.Expires.IsZero() && !now.Before(r.Expires)) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range dead {
			_ = tx.Bucket(bucket).Delete(k)
		}
		return nil
	})
}
