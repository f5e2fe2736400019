package eventlog

import (
	"encoding/binary"
	"encoding/json"
	"time"

	bolt "go.etcd.io/bbolt"
)

// sweepEvery is how often the flusher removes expired runs.
const sweepEvery = time.Minute

// flushLoop writes the pending events every FlushInterval after the first
// append that follows a flush, until Close (which flushes what is left).
func (l *Bolt) flushLoop() {
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-l.signal:
		}
		t := time.NewTimer(l.o.FlushInterval)
		select {
		case <-l.stop:
			t.Stop()
			l.flush()
			return
		case <-t.C:
		}
		l.flush()
	}
}

type boltJob struct {
	w     *boltWriter
	b     *batch
	meta  []byte
	ended bool
}

// flush writes every dirty writer's batch and Meta in one transaction.
func (l *Bolt) flush() {
	l.mu.Lock()
	ws := l.dirty
	l.dirty = nil
	l.mu.Unlock()
	seen := make(map[*boltWriter]bool, len(ws))
	jobs := make([]boltJob, 0, len(ws))
	for _, w := range ws {
		if seen[w] {
			continue
		}
		seen[w] = true
		w.flushMu.Lock()
		j := boltJob{w: w, b: w.take()}
		w.mu.Lock()
		if w.metaDirty {
			j.meta, _ = json.Marshal(w.meta)
			w.metaDirty = false
		}
		j.ended = w.ended
		w.mu.Unlock()
		jobs = append(jobs, j)
	}
	if len(jobs) > 0 {
		err := l.db.Update(func(tx *bolt.Tx) error {
			for i := range jobs {
				if err := l.write(tx, &jobs[i]); err != nil {
					return err
				}
			}
			return nil
		})
		l.settle(jobs, err)
	}
	if now := time.Now(); now.Sub(l.swept) > sweepEvery {
		l.swept = now
		l.sweep(now)
	}
}

// write stores one job's events and Meta, then trims the run to its
// bounds.
func (l *Bolt) write(tx *bolt.Tx, j *boltJob) error {
	id := []byte(j.w.runID)
	if j.meta != nil {
		if err := tx.Bucket(bucketMeta).Put(id, j.meta); err != nil {
			return err
		}
		live := tx.Bucket(bucketLive)
		var err error
		if j.ended {
			err = live.Delete(id)
		} else {
			err = live.Put(id, nil)
		}
		if err != nil {
			return err
		}
	}
	if j.b == nil {
		return nil
	}
	b, err := tx.Bucket(bucketLogs).CreateBucketIfNotExists(id)
	if err != nil {
		return err
	}
	count, size := j.w.count, j.w.bytes
	// One allocation for the batch's keys: bbolt keeps them until commit.
	keys := make([]byte, 0, 8*j.b.n)
	err = eachFrame(j.b.buf, func(id uint64, data []byte) bool {
		keys = binary.BigEndian.AppendUint64(keys, id)
		if err = b.Put(keys[len(keys)-8:], data); err != nil {
			return false
		}
		count++
		size += len(data)
		return true
	})
	if err != nil {
		return err
	}
	// (A bbolt cursor skips an item after Delete: start again each time.)
	c := b.Cursor()
	for count > l.o.MaxEvents || size > l.o.MaxBytes {
		k, v := c.First()
		if k == nil {
			break
		}
		count--
		size -= len(v)
		if err := c.Delete(); err != nil {
			return err
		}
	}
	j.w.count, j.w.bytes = count, size
	return nil
}

// settle ends a flush: batches that failed go back to their writers;
// writers that ended (or detached) with nothing left leave the live set.
func (l *Bolt) settle(jobs []boltJob, err error) {
	var again []*boltWriter
	gone := false
	for _, j := range jobs {
		w := j.w
		if err != nil {
			if j.b != nil && w.giveBack(j.b, err) {
				again = append(again, w)
			}
			if j.meta != nil {
				w.mu.Lock()
				w.metaDirty = true
				w.mu.Unlock()
			}
		} else if j.b != nil {
			j.b.reset()
		}
		w.flushMu.Unlock()
		w.mu.Lock()
		done := w.closedLocked() && w.pend.n == 0 && !w.metaDirty && err == nil
		w.mu.Unlock()
		if done {
			l.mu.Lock()
			if l.live[w.runID] == w {
				delete(l.live, w.runID)
				gone = true
			}
			l.mu.Unlock()
		}
	}
	l.mu.Lock()
	l.dirty = append(l.dirty, again...)
	if gone {
		l.broadcastLocked()
	}
	l.mu.Unlock()
	if len(again) > 0 {
		l.kick()
	}
}

// sweep removes the runs past their retention (or their MaxAge) that no
// writer of this process holds.
func (l *Bolt) sweep(now time.Time) {
	l.mu.Lock()
	live := make(map[string]bool, len(l.live))
	for id := range l.live {
		live[id] = true
	}
	l.mu.Unlock()
	_ = l.db.Update(func(tx *bolt.Tx) error {
		var dead [][]byte
		_ = tx.Bucket(bucketMeta).ForEach(func(k, v []byte) error {
			var m Meta
			if !live[string(k)] && (json.Unmarshal(v, &m) != nil || l.expired(&m, now)) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range dead {
			_ = tx.Bucket(bucketMeta).Delete(k)
			_ = tx.Bucket(bucketLive).Delete(k)
			_ = tx.Bucket(bucketLogs).DeleteBucket(k)
		}
		return nil
	})
}
