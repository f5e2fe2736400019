package limits

import (
	"context"
	"sync"
	"time"
)

// Store keeps the counters of limits that outlive a run, by key. The key
// names the agent node and the session (see Key), so that one store can
// serve every agent of a process, or of several processes when it is
// shared.
//
// Each method is one atomic step, the kind a shared store (Redis, a
// database) performs in one round trip. A store that fails returns an
// error, and the limit it guards then refuses: a budget never opens
// because its store is down.
type Store interface {
	// Take records one event under key if fewer than max were recorded in
	// the window before now. It returns the events in the window (the new
	// one included when recorded) and whether it was recorded.
	Take(ctx context.Context, key string, max int, window time.Duration) (used int, ok bool, err error)
	// Add adds n to key's total and returns the new total. The total is
	// forgotten once nothing was added for ttl.
	Add(ctx context.Context, key string, n int64, ttl time.Duration) (total int64, err error)
	// Total returns key's total, 0 when it is unknown or forgotten.
	Total(ctx context.Context, key string) (int64, error)
}

// Key is the store key of one limit of one session of one agent node.
func Key(chainID, nodeID, session, limit string) string {
	return chainID + "\x00" + nodeID + "\x00" + session + "\x00" + limit
}

// Memory is a Store in process memory. Expired counters are swept as it is
// used, so it needs no goroutine of its own.
type Memory struct {
	mu        sync.Mutex
	m         map[string]*counter
	now       func() time.Time
	ops       int
	lastSweep time.Time
}

type counter struct {
	events  []time.Time // Take: the times in the window, oldest first
	total   int64       // Add
	expires time.Time
}

// sweepEvery bounds how long expired counters stay: every so many
// operations, or this often, whichever comes first.
const (
	sweepEvery    = 1024
	sweepInterval = 5 * time.Minute
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{m: map[string]*counter{}, now: time.Now} }

// SetClock replaces the store's clock (tests).
func (m *Memory) SetClock(now func() time.Time) {
	m.mu.Lock()
	m.now = now
	m.mu.Unlock()
}

// Len is the number of counters kept.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Take implements Store.
func (m *Memory) Take(_ context.Context, key string, max int, window time.Duration) (int, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.tick()
	c := m.counter(key, now)
	cut := 0
	for cut < len(c.events) && !c.events[cut].After(now.Add(-window)) {
		cut++
	}
	c.events = c.events[cut:]
	if len(c.events) >= max {
		return len(c.events), false, nil
	}
	c.events = append(c.events, now)
	c.expires = later(c.expires, now.Add(window))
	return len(c.events), true, nil
}

// Add implements Store.
func (m *Memory) Add(_ context.Context, key string, n int64, ttl time.Duration) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.tick()
	c := m.counter(key, now)
	c.total += n
	c.expires = later(c.expires, now.Add(ttl))
	return c.total, nil
}

// Total implements Store.
func (m *Memory) Total(_ context.Context, key string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[key]
	if !ok || !c.expires.After(m.now()) {
		return 0, nil
	}
	return c.total, nil
}

// counter returns key's live counter, a fresh one when it expired.
func (m *Memory) counter(key string, now time.Time) *counter {
	c, ok := m.m[key]
	if !ok || !c.expires.After(now) {
		c = &counter{expires: now}
		m.m[key] = c
	}
	return c
}

// tick returns the time and sweeps expired counters now and then.
func (m *Memory) tick() time.Time {
	now := m.now()
	m.ops++
	if m.ops >= sweepEvery || now.Sub(m.lastSweep) >= sweepInterval {
		m.ops, m.lastSweep = 0, now
		for k, c := range m.m {
			if !c.expires.After(now) {
				delete(m.m, k)
			}
		}
	}
	return now
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
