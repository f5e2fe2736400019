package checkpoint

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Memory keeps checkpoints in the process (a host without a data folder:
// tests, embedding, `ruleagent run`). Holders are alive while alive says
// so; nil means only the holder given to NewMemory (the process).
type Memory struct {
	alive Alive
	now   func() time.Time

	mu  sync.Mutex
	cps map[string]*record
}

// NewMemory returns an empty store; alive tells which holders still live
// (nil: every holder does, the one process).
func NewMemory(alive Alive) *Memory {
	if alive == nil {
		alive = func(context.Context, string) (bool, error) { return true, nil }
	}
	return &Memory{alive: alive, now: time.Now, cps: map[string]*record{}}
}

// get returns runID's live checkpoint; the caller holds m.mu.
func (m *Memory) get(runID string) (*record, bool) {
	r, ok := m.cps[runID]
	if !ok {
		return nil, false
	}
	if !r.Expires.IsZero() && !m.now().Before(r.Expires) {
		delete(m.cps, runID)
		return nil, false
	}
	return r, true
}

func (m *Memory) nextFence(f uint64) uint64 { return max(f+1, uint64(m.now().UnixMicro())) }

// out is a copy of r for a caller.
func out(r *record) *Checkpoint {
	cp := r.Checkpoint
	cp.Data = slices.Clone(r.Data)
	return &cp
}

// Save implements Store.
func (m *Memory) Save(_ context.Context, cp *Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.get(cp.RunID)
	switch {
	case cp.Fence == 0 && ok:
		return ErrExists
	case cp.Fence != 0 && !ok:
		return ErrNotFound
	case cp.Fence != 0 && cur.Fence != cp.Fence:
		return ErrFenced
	}
	var f uint64
	if ok {
		f = cur.Fence
	}
	r := &record{Checkpoint: *cp, Data: slices.Clone(cp.Data)}
	r.Fence, r.Saved = m.nextFence(f), m.now().UTC()
	r.Checkpoint.Data = nil
	m.cps[cp.RunID] = r
	cp.Fence, cp.Saved = r.Fence, r.Saved
	return nil
}

// Load implements Store.
func (m *Memory) Load(_ context.Context, runID string) (*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.get(runID)
	if !ok {
		return nil, ErrNotFound
	}
	return out(r), nil
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, runID, replica string) (*Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.get(runID)
	if !ok {
		return nil, ErrNotFound
	}
	if r.Holder != "" {
		alive, err := m.alive(ctx, r.Holder)
		if err != nil {
			return nil, err
		}
		if alive {
			return nil, fmt.Errorf("%w: %s", ErrClaimed, r.Holder)
		}
	}
	r.Holder, r.Fence = replica, m.nextFence(r.Fence)
	return out(r), nil
}

// change applies fn to runID's checkpoint if fence is its fence.
func (m *Memory) change(runID string, fence uint64, fn func(r *record)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.get(runID)
	switch {
	case !ok:
		return ErrNotFound
	case r.Fence != fence:
		return ErrFenced
	}
	fn(r)
	return nil
}

// Release implements Store.
func (m *Memory) Release(_ context.Context, runID string, fence uint64) error {
	return m.change(runID, fence, func(r *record) { r.Holder, r.Fence = "", m.nextFence(r.Fence) })
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, runID string, fence uint64) error {
	return m.change(runID, fence, func(*record) { delete(m.cps, runID) })
}

// List implements Store.
func (m *Memory) List(context.Context) ([]Checkpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var list []Checkpoint
	for id := range m.cps {
		if r, ok := m.get(id); ok {
			cp := r.Checkpoint
			cp.Data = nil
			list = append(list, cp)
		}
	}
	slices.SortFunc(list, func(a, b Checkpoint) int { return a.Saved.Compare(b.Saved) })
	return list, nil
}
