package audit

import (
	"slices"
	"sync"
)

// Recorder is a Sink that keeps the records in memory, in the order they
// came: for tests, and for embedders that forward records themselves.
type Recorder struct {
	mu   sync.Mutex
	recs []Record
}

// Record implements Sink.
func (r *Recorder) Record(rec Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

// Records returns a copy of the records kept, of the given kinds (all of
// them when none is given).
func (r *Recorder) Records(kinds ...string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(kinds) == 0 {
		return slices.Clone(r.recs)
	}
	var out []Record
	for _, rec := range r.recs {
		if slices.Contains(kinds, rec.Kind) {
			out = append(out, rec)
		}
	}
	return out
}
