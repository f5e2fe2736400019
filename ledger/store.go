package ledger

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Store keeps the ledger: its records, by UTC day, and the daily totals
// of each user and chain that budgets are checked against. Memory, Bolt
// (beside the sessions in the server's bbolt file) and Redis (shared by a
// fleet) implement it.
type Store interface {
	// Append writes a batch's records, adds them to their days' totals
	// and notes the batch's number as its writer's last, in one atomic
	// step.
	Append(ctx context.Context, b Batch) error
	// Scan calls fn with the records of the days fromDay to toDay
	// (YYYY-MM-DD, both included), day by day in the order they were
	// written, until fn returns false.
	Scan(ctx context.Context, fromDay, toDay string, fn func(*Record) bool) error
	// DayTotals returns the totals of each key (zero when there are
	// none), and, read with them in one step, the number of the last batch
	// of writer it holds (0 for none).
	DayTotals(ctx context.Context, writer string, keys []DayKey) ([]Totals, uint64, error)
	// Prune removes the records and totals of the days before beforeDay.
	Prune(ctx context.Context, beforeDay string) error
	// Name says what the store is, for the banner.
	Name() string
}

// Batch is what a ledger's writer writes in one step: records, numbered
// by their writer (a ledger; each server of a fleet has its own).
type Batch struct {
	Writer  string
	Seq     uint64
	Records []Record
}

// days lists the days from..to (YYYY-MM-DD, both included).
func days(from, to string) []string {
	f, err1 := time.Parse(time.DateOnly, from)
	t, err2 := time.Parse(time.DateOnly, to)
	if err1 != nil || err2 != nil || t.Before(f) {
		return nil
	}
	var out []string
	for d := f; !d.After(t); d = d.AddDate(0, 0, 1) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out
}

// batchTotals adds up a batch's records per daily key.
func batchTotals(recs []Record) map[DayKey]*Totals {
	out := map[DayKey]*Totals{}
	for i := range recs {
		for _, k := range recs[i].dayKeys() {
			t := out[k]
			if t == nil {
				t = &Totals{}
				out[k] = t
			}
			t.Add(&recs[i])
		}
	}
	return out
}

// Memory is a Store in the process's memory (serve --session-store
// memory): gone when the process ends.
type Memory struct {
	mu      sync.Mutex
	recs    map[string][]Record
	totals  map[DayKey]Totals
	applied map[string]uint64
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{recs: map[string][]Record{}, totals: map[DayKey]Totals{}, applied: map[string]uint64{}}
}

// Name implements Store.
func (m *Memory) Name() string { return "memory" }

// Append implements Store.
func (m *Memory) Append(_ context.Context, b Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs := b.Records
	for i := range recs {
		d := recs[i].Day()
		m.recs[d] = append(m.recs[d], recs[i])
	}
	for k, t := range batchTotals(recs) {
		cur := m.totals[k]
		cur.Merge(*t)
		m.totals[k] = cur
	}
	m.applied[b.Writer] = b.Seq
	return nil
}

// Scan implements Store.
func (m *Memory) Scan(_ context.Context, fromDay, toDay string, fn func(*Record) bool) error {
	for _, d := range days(fromDay, toDay) {
		m.mu.Lock()
		recs := slices.Clone(m.recs[d])
		m.mu.Unlock()
		for i := range recs {
			if !fn(&recs[i]) {
				return nil
			}
		}
	}
	return nil
}

// DayTotals implements Store.
func (m *Memory) DayTotals(_ context.Context, writer string, keys []DayKey) ([]Totals, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Totals, len(keys))
	for i, k := range keys {
		out[i] = m.totals[k]
	}
	return out, m.applied[writer], nil
}

// Prune implements Store.
func (m *Memory) Prune(_ context.Context, beforeDay string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := range m.recs {
		if d < beforeDay {
			delete(m.recs, d)
		}
	}
	for k := range m.totals {
		if k.Day < beforeDay {
			delete(m.totals, k)
		}
	}
	return nil
}
