package eventlog

import (
	"context"
	"encoding/binary"
	"iter"
	"time"

	bolt "go.etcd.io/bbolt"
)

// readChunk bounds the events a follower copies out of one read
// transaction.
const readChunk = 512

// follower is one Follow's state: what it has yielded and its buffers.
type follower struct {
	pos     uint64
	entries []Entry
	data    []byte
}

func (f *follower) reset() { f.entries, f.data = f.entries[:0], f.data[:0] }

// add copies one event into the follower's buffers. Entries point into
// data, which may move while it grows: offsets are fixed up in finish.
func (f *follower) add(id uint64, b []byte) {
	start := len(f.data)
	f.data = append(f.data, b...)
	f.entries = append(f.entries, Entry{ID: id, Data: f.data[start:len(f.data):len(f.data)]})
}

// finish points each entry into the final data buffer.
func (f *follower) finish() {
	off := 0
	for i := range f.entries {
		n := len(f.entries[i].Data)
		f.entries[i].Data = f.data[off : off+n : off+n]
		off += n
	}
}

// readBolt copies the run's stored events after f.pos (at most
// readChunk); it reports the run's Meta and whether it exists.
func (l *Bolt) readBolt(runID string, f *follower) (Meta, bool, bool) {
	var m Meta
	var ok, more bool
	_ = l.db.View(func(tx *bolt.Tx) error {
		m, ok = readMeta(tx, runID)
		b := tx.Bucket(bucketLogs).Bucket([]byte(runID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(idKey(f.pos + 1)); k != nil; k, v = c.Next() {
			if len(f.entries) == readChunk {
				more = true
				break
			}
			f.add(binary.BigEndian.Uint64(k), v)
		}
		return nil
	})
	return m, ok, more
}

// Follow implements Log.
func (l *Bolt) Follow(ctx context.Context, runID string, after uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		f := &follower{pos: after}
		for {
			l.mu.Lock()
			changed, w, closed := l.changed, l.live[runID], l.closed
			l.mu.Unlock()
			if closed {
				yield(Entry{}, ErrClosed)
				return
			}
			f.reset()
			var wake chan struct{}
			var found, ended bool
			if w != nil {
				// Nothing of the run is being written meanwhile, so the
				// stored events and the pending ones meet exactly.
				w.flushMu.Lock()
				_, _, more := l.readBolt(runID, f)
				w.mu.Lock()
				found = true
				if !more {
					_ = eachFrame(w.pend.buf, func(id uint64, data []byte) bool {
						if id > f.pos && (len(f.entries) == 0 || id > f.entries[len(f.entries)-1].ID) {
							f.add(id, data)
						}
						return true
					})
					ended = w.ended
					if !ended {
						w.waiting, wake = true, w.wake
					}
				}
				w.mu.Unlock()
				w.flushMu.Unlock()
			} else {
				var m Meta
				m, found, _ = l.readBolt(runID, f)
				found = found && !l.expired(&m, time.Now())
				ended = m.Ended()
			}
			if !found {
				yield(Entry{}, ErrNotFound)
				return
			}
			f.finish()
			for _, e := range f.entries {
				if !yield(e, nil) {
					return
				}
				f.pos = e.ID
			}
			if len(f.entries) > 0 {
				continue
			}
			if ended {
				return
			}
			select {
			case <-ctx.Done():
				yield(Entry{}, ctx.Err())
				return
			case <-changed:
			case <-wake:
			}
		}
	}
}
