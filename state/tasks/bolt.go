package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt keeps tasks in a bbolt database the caller opens (the server's
// state file under --data) and closes: bucket mcp_tasks, task id -> JSON.
// Each change is one synced transaction.
type Bolt struct {
	db      *bolt.DB
	now     func() time.Time
	changes fanout

	mu    sync.Mutex
	swept time.Time
}

var bucket = []byte("mcp_tasks")

// NewBolt returns the store in db, creating its bucket.
func NewBolt(db *bolt.DB) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mcp tasks: %w", err)
	}
	return &Bolt{db: db, now: time.Now}, nil
}

func (s *Bolt) get(tx *bolt.Tx, id string, now time.Time) (*Task, bool) {
	v := tx.Bucket(bucket).Get([]byte(id))
	var t Task
	if v == nil || json.Unmarshal(v, &t) != nil || !live(&t, now) {
		return nil, false
	}
	return &t, true
}

func put(tx *bolt.Tx, t *Task) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put([]byte(t.ID), raw)
}

// Create implements Store.
func (s *Bolt) Create(_ context.Context, t *Task) error {
	now := s.now()
	s.sweep(now)
	err := s.db.Update(func(tx *bolt.Tx) error {
		if _, ok := s.get(tx, t.ID, now); ok {
			return ErrExists
		}
		created(t, now)
		return put(tx, t)
	})
	if err == nil {
		s.changes.changed(t.ID)
	}
	return err
}

// Get implements Store.
func (s *Bolt) Get(_ context.Context, id string) (*Task, error) {
	var t *Task
	err := s.db.View(func(tx *bolt.Tx) error {
		var ok bool
		if t, ok = s.get(tx, id, s.now()); !ok {
			return ErrNotFound
		}
		return nil
	})
	return t, err
}

// Update implements Store.
func (s *Bolt) Update(_ context.Context, id string, fn func(*Task) error) (*Task, error) {
	var t *Task
	err := s.db.Update(func(tx *bolt.Tx) error {
		now := s.now()
		var ok bool
		if t, ok = s.get(tx, id, now); !ok {
			return ErrNotFound
		}
		if err := apply(t, now, fn); err != nil {
			return err
		}
		return put(tx, t)
	})
	if err == nil {
		s.changes.changed(id)
	}
	return t, err
}

// Subscribe implements Changes: a bbolt file has one process.
func (s *Bolt) Subscribe(ctx context.Context, fn func(id string)) error {
	return s.changes.subscribe(ctx, fn)
}

// sweep deletes expired tasks, at most once a minute.
func (s *Bolt) sweep(now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.swept) >= time.Minute
	if due {
		s.swept = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	_ = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		var gone [][]byte
		_ = b.ForEach(func(k, _ []byte) error {
			if _, ok := s.get(tx, string(k), now); !ok {
				gone = append(gone, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range gone {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
