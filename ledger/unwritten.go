package ledger

import "sync"

// unwritten is what a budget check must add to the store's daily totals:
// the records queued for the writer, and the batches it is writing, by
// their sequence number. The store keeps, with the totals and in the same
// transaction, the number of the last batch of this ledger it applied, so
// that a check counts each record exactly once (in the store, or here)
// without waiting for a write in progress.
type unwritten struct {
	qmu    sync.Mutex
	queued map[DayKey]*Totals

	// bmu orders the writer's moves of records between queued and
	// batches (Lock) against checks reading both around their store read
	// (RLock): a record is never seen in neither place, nor counted in
	// both the store and here.
	bmu     sync.RWMutex
	batches map[uint64]map[DayKey]*Totals
}

func newUnwritten() *unwritten {
	return &unwritten{queued: map[DayKey]*Totals{}, batches: map[uint64]map[DayKey]*Totals{}}
}

// queue counts a record queued for the writer.
func (u *unwritten) queue(r *Record) {
	u.qmu.Lock()
	defer u.qmu.Unlock()
	for _, k := range r.dayKeys() {
		cur := u.queued[k]
		if cur == nil {
			cur = &Totals{}
			u.queued[k] = cur
		}
		cur.Add(r)
	}
}

// unqueueLocked takes records out of the queued totals; the caller holds
// qmu.
func (u *unwritten) unqueueLocked(bt map[DayKey]*Totals) {
	for k, t := range bt {
		if cur := u.queued[k]; cur != nil {
			cur.sub(*t)
			if *cur == (Totals{}) {
				delete(u.queued, k)
			}
		}
	}
}

// drop forgets a record that was never queued after all (no room).
func (u *unwritten) drop(r *Record) {
	u.qmu.Lock()
	defer u.qmu.Unlock()
	u.unqueueLocked(batchTotals([]Record{*r}))
}

// take moves a batch the writer is about to write from queued to
// batches[seq].
func (u *unwritten) take(seq uint64, recs []Record) {
	bt := batchTotals(recs)
	u.bmu.Lock()
	defer u.bmu.Unlock()
	u.qmu.Lock()
	u.unqueueLocked(bt)
	u.qmu.Unlock()
	m := make(map[DayKey]*Totals, len(bt))
	for k, t := range bt {
		m[k] = t
	}
	u.batches[seq] = m
}

// done forgets batch seq: written (the store counts it now) or lost.
func (u *unwritten) done(seq uint64) {
	u.bmu.Lock()
	delete(u.batches, seq)
	u.bmu.Unlock()
}

// count returns the totals of keys: what read returns from the store
// (with the number of the last batch of this ledger it holds), plus what
// is queued and the batches the store does not hold yet.
func (u *unwritten) count(keys []DayKey, read func() ([]Totals, uint64, error)) ([]Totals, error) {
	u.bmu.RLock()
	defer u.bmu.RUnlock()
	extra := make([]Totals, len(keys))
	u.qmu.Lock()
	for i, k := range keys {
		if t := u.queued[k]; t != nil {
			extra[i].Merge(*t)
		}
	}
	u.qmu.Unlock()
	totals, applied, err := read()
	if err != nil {
		return nil, err
	}
	for seq, m := range u.batches {
		if seq <= applied {
			continue
		}
		for i, k := range keys {
			if t := m[k]; t != nil {
				extra[i].Merge(*t)
			}
		}
	}
	for i := range totals {
		totals[i].Merge(extra[i])
	}
	return totals, nil
}
