package runrecord

import (
	"context"
	"sync"
	"time"
)

// Memory keeps records in the process, for tests and hosts that keep
// nothing on disk. Records are stored encoded, as the other stores keep
// them, so that what is read back is what a store would give.
type Memory struct {
	o     Options
	mu    sync.Mutex
	m     map[string]memRecord
	bytes int // the records' sizes, compressed
}

type memRecord struct {
	meta Meta
	data []byte
}

// NewMemory returns an empty store.
func NewMemory(o Options) *Memory { return &Memory{o: o.Fill(), m: map[string]memRecord{}} }

// Name implements Store.
func (s *Memory) Name() string { return "memory" }

// Put implements Store.
func (s *Memory) Put(_ context.Context, rec *Record) error {
	data, err := encode(rec)
	if err != nil {
		return err
	}
	m := rec.Meta
	m.Bytes = len(data)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for id, r := range s.m {
		if expired(&r.meta, now, s.o.Retention) {
			s.drop(id)
		}
	}
	s.drop(m.RunID)
	s.m[m.RunID] = memRecord{meta: m, data: data}
	s.bytes += len(data)
	// Past the bound, the records that started first go first (the one
	// just put last of all).
	for s.bytes > s.o.MemoryBytes && len(s.m) > 1 {
		oldest := ""
		for id, r := range s.m {
			if id != m.RunID && (oldest == "" || r.meta.StartedAt.Before(s.m[oldest].meta.StartedAt)) {
				oldest = id
			}
		}
		s.drop(oldest)
	}
	return nil
}

// drop removes a record; the caller holds s.mu.
func (s *Memory) drop(id string) {
	if r, ok := s.m[id]; ok {
		s.bytes -= len(r.data)
		delete(s.m, id)
	}
}

// Get implements Store.
func (s *Memory) Get(_ context.Context, runID string) (*Record, error) {
	s.mu.Lock()
	r, ok := s.m[runID]
	s.mu.Unlock()
	if !ok || expired(&r.meta, time.Now(), s.o.Retention) {
		return nil, ErrNotFound
	}
	rec, err := decode(r.data)
	if err != nil {
		return nil, err
	}
	rec.Meta.Bytes = len(r.data)
	return rec, nil
}

// List implements Store.
func (s *Memory) List(_ context.Context, f Filter) ([]Meta, error) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Meta
	for _, r := range s.m {
		if !expired(&r.meta, now, s.o.Retention) && f.match(&r.meta) {
			out = append(out, r.meta)
		}
	}
	return sortMetas(out, f.limit()), nil
}

// Delete implements Store.
func (s *Memory) Delete(_ context.Context, runID string) error {
	s.mu.Lock()
	s.drop(runID)
	s.mu.Unlock()
	return nil
}
