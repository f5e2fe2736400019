package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/ruleagent/ruleagent/state/lease"
)

// Bolt is the embedded persistent store: one bbolt file (by default
// sessions.db under the server's --data folder). Each Put is one bbolt
// transaction, written and synced before it returns, so a crash leaves
// either the turn before or the turn after, never half of one. bbolt locks
// the file: one process at a time.
type Bolt struct {
	db    *bolt.DB
	path  string
	locks *lease.Local
	now   func() time.Time
	sweep sweeper
}

var (
	bucketRecords = []byte("sessions")
	// bucketInfo holds each session's Info and version, so that lists and
	// version checks do not decode whole histories.
	bucketInfo = []byte("sessions.info")
)

// boltInfo is a bucketInfo value.
type boltInfo struct {
	Info
	Version int64 `json:"version"`
}

// ErrLocked reports a bbolt file another process holds.
var ErrLocked = errors.New("the session store is in use by another process")

// OpenBolt opens (creating if needed) the bbolt store at path. An expired
// session is never read or listed, and a write removes them all at most
// once a minute.
func OpenBolt(path string) (*Bolt, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s (is a ruleagent server running on it?)", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("session store %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketRecords, bucketInfo} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("session store %s: %w", path, err)
	}
	return &Bolt{db: db, path: path, now: time.Now, locks: lease.NewLocal()}, nil
}

// Name implements Store.
func (s *Bolt) Name() string { return "bolt " + s.path }

func readInfo(tx *bolt.Tx, id string) (boltInfo, bool) {
	var bi boltInfo
	v := tx.Bucket(bucketInfo).Get([]byte(id))
	if v == nil || json.Unmarshal(v, &bi) != nil {
		return bi, false
	}
	return bi, true
}

func (s *Bolt) live(bi boltInfo) bool { return bi.Expires.IsZero() || s.now().Before(bi.Expires) }

// Get implements Store.
func (s *Bolt) Get(_ context.Context, id string) (*Record, error) {
	var rec *Record
	err := s.db.View(func(tx *bolt.Tx) error {
		bi, ok := readInfo(tx, id)
		if !ok || !s.live(bi) {
			return ErrNotFound
		}
		v := tx.Bucket(bucketRecords).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		var err error
		rec, err = decode(v)
		return err
	})
	return rec, s.err(err)
}

// Put implements Store.
func (s *Bolt) Put(_ context.Context, rec *Record) error {
	next, data, err := rec.next()
	if err != nil {
		return err
	}
	info, err := json.Marshal(boltInfo{Info: next.Info(), Version: next.Version})
	if err != nil {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if err := checkLocal(s.locks, rec); err != nil {
			return err
		}
		cur := int64(0)
		if bi, ok := readInfo(tx, rec.ID); ok && s.live(bi) {
			cur = bi.Version
		}
		if cur != rec.Version {
			return ErrConflict
		}
		if err := tx.Bucket(bucketRecords).Put([]byte(rec.ID), data); err != nil {
			return err
		}
		return tx.Bucket(bucketInfo).Put([]byte(rec.ID), info)
	})
	if err != nil {
		return s.err(err)
	}
	rec.Version = next.Version
	if s.sweep.due(s.now()) {
		s.dropExpired()
	}
	return nil
}

// Delete implements Store.
func (s *Bolt) Delete(_ context.Context, id string) error {
	return s.err(s.db.Update(func(tx *bolt.Tx) error {
		bi, ok := readInfo(tx, id)
		if err := deleteIn(tx, []byte(id)); err != nil {
			return err
		}
		if !ok || !s.live(bi) {
			return ErrNotFound
		}
		return nil
	}))
}

func deleteIn(tx *bolt.Tx, id []byte) error {
	if err := tx.Bucket(bucketRecords).Delete(id); err != nil {
		return err
	}
	return tx.Bucket(bucketInfo).Delete(id)
}

// List implements Store.
func (s *Bolt) List(_ context.Context, f Filter) ([]Info, error) {
	var out []Info
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketInfo).ForEach(func(_, v []byte) error {
			var bi boltInfo
			if json.Unmarshal(v, &bi) == nil && s.live(bi) && f.match(&bi.Info) {
				out = append(out, bi.Info)
			}
			return nil
		})
	})
	return sortInfos(out, f.Limit), s.err(err)
}

// dropExpired removes the expired sessions.
func (s *Bolt) dropExpired() {
	_ = s.db.Update(func(tx *bolt.Tx) error {
		var dead [][]byte
		_ = tx.Bucket(bucketInfo).ForEach(func(k, v []byte) error {
			var bi boltInfo
			if json.Unmarshal(v, &bi) == nil && !s.live(bi) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range dead {
			if err := deleteIn(tx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Lock implements Store.
func (s *Bolt) Lock(ctx context.Context, id string) (Lease, error) { return acquire(ctx, s.locks, id) }

// Close implements Store.
func (s *Bolt) Close() error {
	s.locks.Close()
	return s.db.Close()
}

func (s *Bolt) err(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
