package eventlog

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt is the embedded event log, in a bbolt database the caller opens
// (the server's state file under --data) and closes after Close. Layout:
//
//	bucket eventlog.meta   run id -> Meta JSON
//	bucket eventlog.live   run id -> nothing: the runs not ended (List{Live}
//	                       reads these only, not every run kept)
//	bucket eventlog        one bucket per run id: 8-byte big-endian id -> event
//
// Start, SetStatus and End touch memory only: the flusher writes the
// events and the Meta in one synced transaction per FlushInterval. A crash
// loses at most that interval; a run that had not ended then is listed as
// not ended, with its last stored event, for the server to end it.
type Bolt struct {
	db *bolt.DB
	o  Options

	mu      sync.Mutex
	live    map[string]*boltWriter // the runs this process writes
	dirty   []*boltWriter
	changed chan struct{} // closed and replaced when a run starts, continues or ends
	closed  bool
	signal  chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
	swept   time.Time
}

var (
	bucketMeta = []byte("eventlog.meta")
	bucketLive = []byte("eventlog.live")
	bucketLogs = []byte("eventlog")
)

// NewBolt returns the event log in db, creating its buckets.
func NewBolt(db *bolt.DB, o Options) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketLive, bucketLogs} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	l := &Bolt{db: db, o: o.fill(), live: map[string]*boltWriter{}, changed: make(chan struct{}),
		signal: make(chan struct{}, 1), stop: make(chan struct{})}
	l.wg.Go(l.flushLoop)
	return l, nil
}

// boltWriter is a run's writer; its meta is written with its next flush
// when metaDirty.
type boltWriter struct {
	core
	l         *Bolt
	meta      Meta
	metaDirty bool
	// count and bytes are what the run's bucket holds (for the bounds).
	count, bytes int
}

func idKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

func readMeta(tx *bolt.Tx, runID string) (Meta, bool) {
	var m Meta
	v := tx.Bucket(bucketMeta).Get([]byte(runID))
	return m, v != nil && json.Unmarshal(v, &m) == nil
}

func (l *Bolt) newWriter(m Meta, next uint64) *boltWriter {
	w := &boltWriter{l: l, meta: m, metaDirty: true}
	w.runID, w.next, w.maxPend, w.wake = m.RunID, next, l.o.MaxBytes, make(chan struct{})
	return w
}

// Start implements Log.
func (l *Bolt) Start(_ context.Context, m Meta) (Writer, error) {
	if m.RunID == "" {
		return nil, errors.New("event log: a run needs an id")
	}
	if m.StartedAt.IsZero() {
		m.StartedAt = time.Now().UTC()
	}
	m.Status, m.EndedAt = StatusRunning, time.Time{}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if l.live[m.RunID] != nil {
		return nil, ErrExists
	}
	var exists bool
	_ = l.db.View(func(tx *bolt.Tx) error { _, exists = readMeta(tx, m.RunID); return nil })
	if exists {
		return nil, ErrExists
	}
	w := l.newWriter(m, 1)
	l.register(w)
	return w, nil
}

// Continue implements Log.
func (l *Bolt) Continue(_ context.Context, runID, from, owner string) (Writer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	if w := l.live[runID]; w != nil {
		w.mu.Lock()
		ended := w.ended
		w.mu.Unlock()
		if ended {
			return nil, ErrEnded
		}
		// Its writer is open in this process: the owner goes on with it.
		return nil, fmt.Errorf("%w: its writer is open in this process", ErrOwned)
	}
	var m Meta
	var ok bool
	var last uint64
	var count, size int
	_ = l.db.View(func(tx *bolt.Tx) error {
		if m, ok = readMeta(tx, runID); !ok {
			return nil
		}
		if b := tx.Bucket(bucketLogs).Bucket([]byte(runID)); b != nil {
			if k, _ := b.Cursor().Last(); k != nil {
				last = binary.BigEndian.Uint64(k)
			}
			_ = b.ForEach(func(_, v []byte) error { count++; size += len(v); return nil })
		}
		return nil
	})
	switch {
	case !ok || l.expired(&m, time.Now()):
		return nil, ErrNotFound
	case m.Ended():
		return nil, ErrEnded
	case from != "" && m.Owner != from:
		return nil, fmt.Errorf("%w: %s", ErrOwned, m.Owner)
	}
	m.Owner, m.Status = owner, StatusRunning
	w := l.newWriter(m, last+1)
	w.count, w.bytes = count, size
	l.register(w)
	return w, nil
}

// register makes w the run's live writer and has it flushed; the caller
// holds l.mu.
func (l *Bolt) register(w *boltWriter) {
	l.live[w.runID] = w
	l.dirty = append(l.dirty, w)
	w.dirty = true
	l.broadcastLocked()
	l.kick()
}

func (l *Bolt) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Bolt) kick() {
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// markDirty registers w with the flusher.
func (l *Bolt) markDirty(w *boltWriter) {
	l.mu.Lock()
	l.dirty = append(l.dirty, w)
	l.mu.Unlock()
	l.kick()
}

// Append implements Writer.
func (w *boltWriter) Append(data []byte) uint64 { return w.append(data, w.mark) }

func (w *boltWriter) mark() { w.l.markDirty(w) }

// SetStatus implements Writer.
func (w *boltWriter) SetStatus(_ context.Context, status string) error {
	w.setMeta(func(m *Meta) { m.Status = status }, false)
	return nil
}

// End implements Writer: the end is written with the next flush;
// followers in this process see it at once.
func (w *boltWriter) End(_ context.Context, status string) error {
	w.setMeta(func(m *Meta) { m.Status, m.EndedAt = status, time.Now().UTC() }, true)
	w.l.mu.Lock()
	w.l.broadcastLocked()
	w.l.mu.Unlock()
	return nil
}

func (w *boltWriter) setMeta(fn func(*Meta), end bool) {
	w.mu.Lock()
	if w.closedLocked() {
		w.mu.Unlock()
		return
	}
	fn(&w.meta)
	w.metaDirty = true
	w.ended = end
	first := !w.dirty
	w.dirty = true
	if w.waiting {
		close(w.wake)
		w.wake, w.waiting = make(chan struct{}), false
	}
	w.mu.Unlock()
	if first {
		w.mark()
	}
}

// Detach implements Writer: one transaction, now, with what is pending
// and the Meta; the writer then leaves the process's live set.
func (w *boltWriter) Detach(context.Context) error {
	if !w.detach() {
		return nil
	}
	l := w.l
	// After the batch the flusher may be writing, if it is.
	w.flushMu.Lock()
	j := boltJob{w: w, b: w.take()}
	w.mu.Lock()
	if w.metaDirty {
		j.meta, _ = json.Marshal(w.meta)
		w.metaDirty = false
	}
	w.mu.Unlock()
	err := l.db.Update(func(tx *bolt.Tx) error { return l.write(tx, &j) })
	l.settle([]boltJob{j}, err)
	if err != nil {
		return fmt.Errorf("event log: run %s: its last events are not stored yet: %w", w.runID, err)
	}
	return nil
}

// Meta implements Log.
func (l *Bolt) Meta(_ context.Context, runID string) (Meta, error) {
	l.mu.Lock()
	w := l.live[runID]
	l.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.meta, nil
	}
	var m Meta
	var ok bool
	_ = l.db.View(func(tx *bolt.Tx) error { m, ok = readMeta(tx, runID); return nil })
	if !ok || l.expired(&m, time.Now()) {
		return Meta{}, ErrNotFound
	}
	return m, nil
}

// List implements Log.
func (l *Bolt) List(_ context.Context, f Filter) ([]Meta, error) {
	now := time.Now()
	seen := map[string]bool{}
	var out []Meta
	l.mu.Lock()
	for _, w := range l.live {
		w.mu.Lock()
		m := w.meta
		w.mu.Unlock()
		seen[m.RunID] = true
		if f.match(&m) {
			out = append(out, m)
		}
	}
	l.mu.Unlock()
	err := l.db.View(func(tx *bolt.Tx) error {
		metas := tx.Bucket(bucketMeta)
		keep := func(k, v []byte) error {
			var m Meta
			if v == nil || seen[string(k)] || json.Unmarshal(v, &m) != nil || l.expired(&m, now) || !f.match(&m) {
				return nil
			}
			out = append(out, m)
			return nil
		}
		if f.Live {
			return tx.Bucket(bucketLive).ForEach(func(k, _ []byte) error { return keep(k, metas.Get(k)) })
		}
		return metas.ForEach(keep)
	})
	return sortMetas(out, f.Limit), err
}

func (l *Bolt) expired(m *Meta, now time.Time) bool {
	if m.Ended() {
		return now.Sub(m.EndedAt) > l.o.Retention
	}
	return now.Sub(m.StartedAt) > l.o.MaxAge
}

// sortMetas orders runs most recently started first and applies limit.
func sortMetas(out []Meta, limit int) []Meta {
	slices.SortFunc(out, func(a, b Meta) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmpString(a.RunID, b.RunID)
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Close implements Log.
func (l *Bolt) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	l.broadcastLocked()
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}
