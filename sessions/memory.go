package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/state/lease"
)

// Memory is a store in the process's memory: fast, and gone with the
// process. Records are kept encoded, as the other stores keep them, so
// that no caller shares a record with the store.
type Memory struct {
	locks   *lease.Local
	now     func() time.Time
	sweep   sweeper
	apiKeys memKeys

	mu     sync.Mutex
	recs   map[string]memEntry
	closed bool
}

type memEntry struct {
	data    []byte
	info    Info
	version int64
}

func (e memEntry) live(now time.Time) bool {
	return e.info.Expires.IsZero() || now.Before(e.info.Expires)
}

// NewMemory returns an empty in-memory store. Expired sessions are
// dropped when read or listed, and all of them by a write at most once a
// minute; the store holds no goroutine, so it needs no Close but its own.
func NewMemory() *Memory {
	return &Memory{recs: map[string]memEntry{}, now: time.Now, locks: lease.NewLocal()}
}

// dropExpired removes the expired sessions; the caller holds m.mu.
func (m *Memory) dropExpired(now time.Time) {
	for id, e := range m.recs {
		if !e.live(now) {
			delete(m.recs, id)
		}
	}
}

// Name implements Store.
func (m *Memory) Name() string { return "memory" }

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (*Record, error) {
	m.mu.Lock()
	e, ok := m.recs[id]
	closed := m.closed
	m.mu.Unlock()
	switch {
	case closed:
		return nil, ErrClosed
	case !ok || !e.live(m.now()):
		return nil, ErrNotFound
	}
	return decode(e.data)
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, rec *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := checkLocal(m.locks, rec); err != nil {
		return err
	}
	cur := int64(0)
	if e, ok := m.recs[rec.ID]; ok && e.live(m.now()) {
		cur = e.version
	}
	if cur != rec.Version {
		return ErrConflict
	}
	next, b, err := rec.next()
	if err != nil {
		return err
	}
	m.recs[rec.ID] = memEntry{data: b, info: next.Info(), version: next.Version}
	rec.Version = next.Version
	if now := m.now(); m.sweep.due(now) {
		m.dropExpired(now)
	}
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	e, ok := m.recs[id]
	delete(m.recs, id)
	if !ok || !e.live(m.now()) {
		return ErrNotFound
	}
	return nil
}

// List implements Store. Expired sessions are dropped on the way.
func (m *Memory) List(_ context.Context, f Filter) ([]Info, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	now := m.now()
	var out []Info
	for id, e := range m.recs {
		if !e.live(now) {
			delete(m.recs, id)
			continue
		}
		if f.match(&e.info) {
			out = append(out, e.info)
		}
	}
	return sortInfos(out, f.Limit), nil
}

// Lock implements Store.
func (m *Memory) Lock(ctx context.Context, id string) (Lease, error) {
	return acquire(ctx, m.locks, id)
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed, m.recs = true, nil
	m.mu.Unlock()
	return m.locks.Close()
}
