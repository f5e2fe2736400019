package eventlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// batch is events framed one after the other: uvarint id, uvarint length,
// bytes. Ids grow but need not be consecutive (dropped events leave gaps).
type batch struct {
	buf  []byte
	n    int
	last uint64
}

func (b *batch) add(id uint64, data []byte) {
	b.buf = binary.AppendUvarint(b.buf, id)
	b.buf = binary.AppendUvarint(b.buf, uint64(len(data)))
	b.buf = append(b.buf, data...)
	b.n++
	b.last = id
}

func (b *batch) reset() { b.buf, b.n, b.last = b.buf[:0], 0, 0 }

// errFrame reports a batch that does not decode (a store's data damaged).
var errFrame = errors.New("event log: a damaged batch")

// eachFrame calls fn with each event of buf in order until fn returns
// false.
func eachFrame(buf []byte, fn func(id uint64, data []byte) bool) error {
	for len(buf) > 0 {
		id, k := binary.Uvarint(buf)
		if k <= 0 {
			return errFrame
		}
		buf = buf[k:]
		size, k := binary.Uvarint(buf)
		if k <= 0 || uint64(len(buf)-k) < size {
			return errFrame
		}
		data := buf[k : k+int(size)]
		buf = buf[k+int(size):]
		if !fn(id, data) {
			return nil
		}
	}
	return nil
}

// core is the part of a writer both stores share: ids, the pending batch,
// and the bookkeeping of what could not be stored.
type core struct {
	runID string

	mu    sync.Mutex
	next  uint64 // the id of the next Append
	pend  batch
	spare batch // the batch being written, reused
	dirty bool  // registered with the flusher
	ended bool
	// detached: the writer let the run's log go (Detach); nothing more
	// is appended.
	detached bool
	dropped  int
	err      error
	maxPend  int
	// wake is closed (and replaced) at the next Append when waiting is
	// set: the in-process followers' signal.
	wake    chan struct{}
	waiting bool

	// flushMu serialises the writes of this run's batches, so that a
	// batch is stored before the next one.
	flushMu sync.Mutex
}

// append adds data under id next; markDirty registers the writer with the
// flusher the first time it has something pending.
func (c *core) append(data []byte, markDirty func()) uint64 {
	c.mu.Lock()
	if c.ended || c.detached {
		c.mu.Unlock()
		return 0
	}
	id := c.next
	c.next++
	if len(c.pend.buf)+len(data) > c.maxPend {
		c.dropped++
	} else {
		c.pend.add(id, data)
	}
	first := !c.dirty
	c.dirty = true
	if c.waiting {
		close(c.wake)
		c.wake, c.waiting = make(chan struct{}), false
	}
	c.mu.Unlock()
	if first {
		markDirty()
	}
	return id
}

// detach marks the writer detached and wakes its in-process followers;
// it reports false when it had ended or detached already.
func (c *core) detach() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.detached {
		return false
	}
	c.detached = true
	if c.waiting {
		close(c.wake)
		c.wake, c.waiting = make(chan struct{}), false
	}
	return true
}

// closedLocked reports whether the writer takes nothing more; the caller
// holds c.mu.
func (c *core) closedLocked() bool { return c.ended || c.detached }

// take hands the pending batch to the flusher (the caller holds flushMu
// until it is stored or given back).
func (c *core) take() *batch {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirty = false
	if c.pend.n == 0 {
		return nil
	}
	c.pend, c.spare = c.spare, c.pend
	c.pend.reset()
	return &c.spare
}

// giveBack puts a batch that could not be stored back before what was
// appended since, and reports whether the writer must be registered again.
func (c *core) giveBack(b *batch, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	if c.pend.n > 0 {
		merged := batch{buf: append(append(make([]byte, 0, len(b.buf)+len(c.pend.buf)), b.buf...), c.pend.buf...),
			n: b.n + c.pend.n, last: c.pend.last}
		c.pend = merged
	} else {
		c.pend.buf, c.pend.n, c.pend.last = append(c.pend.buf[:0], b.buf...), b.n, b.last
	}
	b.reset()
	again := !c.dirty
	c.dirty = true
	return again
}

// Err implements Writer.
func (c *core) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	if c.dropped > 0 {
		err = errors.Join(err, fmt.Errorf("%w: %d events of run %s", ErrDropped, c.dropped, c.runID))
	}
	c.err, c.dropped = nil, 0
	return err
}
