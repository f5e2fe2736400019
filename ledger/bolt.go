package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// Bolt keeps the ledger in a bbolt file, beside the sessions in the
// server's own (sessions.db under --data: one file, one lock):
//
//	usage.records / YYYY-MM-DD / seq   a record's JSON, per day in the
//	                                    order written (a bucket per day,
//	                                    so pruning drops whole days)
//	usage.days / DAY 0 DIM 0 ID         a user's or chain's day totals (JSON)
//	usage.applied / WRITER              the number of the writer's last batch
//
// A batch of records is one transaction, synced once.
type Bolt struct{ db *bolt.DB }

var (
	bucketUsageRecords = []byte("usage.records")
	bucketUsageDays    = []byte("usage.days")
	bucketUsageApplied = []byte("usage.applied")
)

// NewBolt keeps the ledger in db, creating its buckets.
func NewBolt(db *bolt.DB) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketUsageRecords, bucketUsageDays, bucketUsageApplied} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	return &Bolt{db: db}, err
}

// Name implements Store.
func (s *Bolt) Name() string { return "bolt " + s.db.Path() }

func dayKeyBytes(k DayKey) []byte {
	b := make([]byte, 0, len(k.Day)+len(k.Dim)+len(k.ID)+2)
	b = append(append(append(b, k.Day...), 0), k.Dim...)
	return append(append(b, 0), k.ID...)
}

// Append implements Store.
func (s *Bolt) Append(_ context.Context, b Batch) error {
	recs := b.Records
	return s.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketUsageRecords)
		var day *bolt.Bucket
		dayName := ""
		for i := range recs {
			if d := recs[i].Day(); d != dayName || day == nil {
				var err error
				if day, err = root.CreateBucketIfNotExists([]byte(d)); err != nil {
					return err
				}
				dayName = d
			}
			seq, err := day.NextSequence()
			if err != nil {
				return err
			}
			v, err := json.Marshal(&recs[i])
			if err != nil {
				return err
			}
			if err := day.Put(binary.BigEndian.AppendUint64(nil, seq), v); err != nil {
				return err
			}
		}
		totals := tx.Bucket(bucketUsageDays)
		for k, t := range batchTotals(recs) {
			key := dayKeyBytes(k)
			var cur Totals
			if v := totals.Get(key); v != nil {
				if err := json.Unmarshal(v, &cur); err != nil {
					return err
				}
			}
			cur.Merge(*t)
			v, err := json.Marshal(cur)
			if err != nil {
				return err
			}
			if err := totals.Put(key, v); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketUsageApplied).Put([]byte(b.Writer), binary.BigEndian.AppendUint64(nil, b.Seq))
	})
}

// Scan implements Store. Each day is read in a transaction of its own, so
// that a long scan does not hold the file.
func (s *Bolt) Scan(ctx context.Context, fromDay, toDay string, fn func(*Record) bool) error {
	for _, d := range days(fromDay, toDay) {
		stop := false
		err := s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketUsageRecords).Bucket([]byte(d))
			if b == nil {
				return nil
			}
			return b.ForEach(func(_, v []byte) error {
				if stop {
					return nil
				}
				var r Record
				if err := json.Unmarshal(v, &r); err != nil {
					return err
				}
				stop = !fn(&r)
				return nil
			})
		})
		if err != nil || stop {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// DayTotals implements Store.
func (s *Bolt) DayTotals(_ context.Context, writer string, keys []DayKey) ([]Totals, uint64, error) {
	out := make([]Totals, len(keys))
	var applied uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketUsageApplied).Get([]byte(writer)); len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		}
		b := tx.Bucket(bucketUsageDays)
		for i, k := range keys {
			if v := b.Get(dayKeyBytes(k)); v != nil {
				if err := json.Unmarshal(v, &out[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return out, applied, err
}

// Prune implements Store.
func (s *Bolt) Prune(_ context.Context, beforeDay string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketUsageRecords)
		var old [][]byte
		c := root.Cursor()
		for k, _ := c.First(); k != nil && string(k) < beforeDay; k, _ = c.Next() {
			old = append(old, bytes.Clone(k))
		}
		for _, k := range old {
			if err := root.DeleteBucket(k); err != nil {
				return err
			}
		}
		totals := tx.Bucket(bucketUsageDays)
		tc := totals.Cursor()
		for k, _ := tc.First(); k != nil && string(k[:min(len(k), len(beforeDay))]) < beforeDay; k, _ = tc.First() {
			if err := totals.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
