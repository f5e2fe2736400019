package tasks

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Memory keeps tasks in the process.
type Memory struct {
	now     func() time.Time
	changes fanout

	mu    sync.Mutex
	tasks map[string][]byte // id -> JSON, copied in and out
	swept time.Time
}

// NewMemory returns an empty store.
func NewMemory() *Memory { return &Memory{now: time.Now, tasks: map[string][]byte{}} }

// Create implements Store.
func (m *Memory) Create(_ context.Context, t *Task) error {
	now := m.now()
	m.mu.Lock()
	m.sweep(now)
	if _, ok := m.load(t.ID, now); ok {
		m.mu.Unlock()
		return ErrExists
	}
	created(t, now)
	err := m.store(t)
	m.mu.Unlock()
	if err == nil {
		m.changes.changed(t.ID)
	}
	return err
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, id string) (*Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.load(id, m.now())
	if !ok {
		return nil, ErrNotFound
	}
	return t, nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, id string, fn func(*Task) error) (*Task, error) {
	t, err := m.update(id, fn)
	if err == nil {
		m.changes.changed(id)
	}
	return t, err
}

func (m *Memory) update(id string, fn func(*Task) error) (*Task, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.load(id, now)
	if !ok {
		return nil, ErrNotFound
	}
	if err := apply(t, now, fn); err != nil {
		return t, err
	}
	return t, m.store(t)
}

// Subscribe implements Changes.
func (m *Memory) Subscribe(ctx context.Context, fn func(id string)) error {
	return m.changes.subscribe(ctx, fn)
}

func (m *Memory) load(id string, now time.Time) (*Task, bool) {
	raw, ok := m.tasks[id]
	if !ok {
		return nil, false
	}
	var t Task
	if json.Unmarshal(raw, &t) != nil || !live(&t, now) {
		return nil, false
	}
	return &t, true
}

func (m *Memory) store(t *Task) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	m.tasks[t.ID] = raw
	return nil
}

// sweep forgets expired tasks, at most once a minute. The caller holds m.mu.
func (m *Memory) sweep(now time.Time) {
	if now.Sub(m.swept) < time.Minute {
		return
	}
	m.swept = now
	for id := range m.tasks {
		if _, ok := m.load(id, now); !ok {
			delete(m.tasks, id)
		}
	}
}
