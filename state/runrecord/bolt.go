package runrecord

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt keeps records in a bbolt database the caller opens and closes (the
// sessions' file under --data). Layout:
//
//	bucket runrecord.meta   run id -> Meta JSON
//	bucket runrecord        run id -> the record, gzipped JSON
//
// Expired records are removed by Put, at most once a minute.
type Bolt struct {
	db *bolt.DB
	o  Options

	mu    sync.Mutex
	swept time.Time
}

var (
	bucketMeta    = []byte("runrecord.meta")
	bucketRecords = []byte("runrecord")
)

// NewBolt returns the records in db, creating their buckets.
func NewBolt(db *bolt.DB, o Options) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketRecords} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("run records: %w", err)
	}
	return &Bolt{db: db, o: o.Fill()}, nil
}

// Name implements Store.
func (b *Bolt) Name() string { return "bolt " + b.db.Path() }

// Put implements Store.
func (b *Bolt) Put(_ context.Context, rec *Record) error {
	data, m, meta, err := encoded(rec)
	if err != nil {
		return err
	}
	id := []byte(m.RunID)
	err = b.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketRecords).Put(id, data); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(id, meta)
	})
	if err != nil {
		return fmt.Errorf("run records: %w", err)
	}
	b.sweep()
	return nil
}

// Get implements Store.
func (b *Bolt) Get(_ context.Context, runID string) (*Record, error) {
	var data []byte
	var m Meta
	_ = b.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte(runID)); v == nil || json.Unmarshal(v, &m) != nil {
			return nil
		}
		if v := tx.Bucket(bucketRecords).Get([]byte(runID)); v != nil {
			data = append([]byte(nil), v...)
		}
		return nil
	})
	if data == nil || expired(&m, time.Now(), b.o.Retention) {
		return nil, ErrNotFound
	}
	rec, err := decode(data)
	if err != nil {
		return nil, err
	}
	rec.Meta.Bytes = len(data)
	return rec, nil
}

// List implements Store.
func (b *Bolt) List(_ context.Context, f Filter) ([]Meta, error) {
	now := time.Now()
	var out []Meta
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).ForEach(func(_, v []byte) error {
			var m Meta
			if json.Unmarshal(v, &m) == nil && !expired(&m, now, b.o.Retention) && f.match(&m) {
				out = append(out, m)
			}
			return nil
		})
	})
	return sortMetas(out, f.limit()), err
}

// Delete implements Store.
func (b *Bolt) Delete(_ context.Context, runID string) error {
	return b.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketRecords).Delete([]byte(runID)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Delete([]byte(runID))
	})
}

// sweep removes the expired records, at most once a minute.
func (b *Bolt) sweep() {
	now := time.Now()
	b.mu.Lock()
	if now.Sub(b.swept) < time.Minute {
		b.mu.Unlock()
		return
	}
	b.swept = now
	b.mu.Unlock()
	_ = b.db.Update(func(tx *bolt.Tx) error {
		var dead [][]byte
		_ = tx.Bucket(bucketMeta).ForEach(func(k, v []byte) error {
			var m Meta
			if json.Unmarshal(v, &m) != nil || expired(&m, now, b.o.Retention) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range dead {
			_ = tx.Bucket(bucketMeta).Delete(k)
			_ = tx.Bucket(bucketRecords).Delete(k)
		}
		return nil
	})
}
