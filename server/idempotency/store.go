// Package idempotency keeps the answers to requests that must not run
// twice, so that a retry is answered from the first attempt instead of
// running it again: its status, headers and body, or, for a stream, its
// frames, replayed as they were sent, or followed live while the first
// attempt still runs.
//
// Memory is bounded: each answer up to Limits.MaxAnswer bytes (a longer one
// is marked truncated and its frames dropped), every kept answer together
// up to Limits.MaxTotal (the oldest go first), and an answer is forgotten
// its TTL after it ended, or was last replayed.
package idempotency

import (
	"container/list"
	"errors"
	"sync"
	"time"
)

// ErrMismatch refuses a key that a different request used.
var ErrMismatch = errors.New("this idempotency key was used with a different request")

// Limits bound a Store.
type Limits struct {
	// MaxAnswer bounds one answer's frames, in bytes.
	MaxAnswer int
	// MaxTotal bounds the kept answers together, in bytes (each counts its
	// frames, its key and entryOverhead).
	MaxTotal int64
}

// entryOverhead is what an entry costs beyond its frames and key.
const entryOverhead = 256

// Store is a set of answers by key. It is safe for concurrent use.
type Store struct {
	limits Limits
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*Entry
	// kept are the finished entries, least recently used first.
	kept  *list.List
	total int64
}

// New returns an empty store.
func New(l Limits) *Store {
	return &Store{limits: l, now: time.Now, entries: map[string]*Entry{}, kept: list.New()}
}

// Entry is one request's answer, written by its first attempt and read by
// its retries.
type Entry struct {
	key         string
	fingerprint [32]byte
	ttl         time.Duration
	max         int

	// Set under the store's lock.
	elem    *list.Element
	expires time.Time
	size    int64

	mu        sync.Mutex
	status    int
	header    map[string]string
	data      []byte
	ends      []int
	truncated bool
	finished  bool
	// wake, when set, is closed at the next change: followers wait on it.
	wake chan struct{}
}

// Begin looks key up. The first attempt (first true) gets a new entry to
// write its answer into and must Finish it; a retry gets the entry the
// first attempt writes or wrote. fingerprint tells requests apart: a key
// used before with another fingerprint is refused with ErrMismatch. ttl is
// how long the answer is kept after it ends.
func (s *Store) Begin(key string, fingerprint [32]byte, ttl time.Duration) (e *Entry, first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweepLocked(now)
	if e, ok := s.entries[key]; ok && e.elem != nil && !now.Before(e.expires) {
		s.removeLocked(e)
	}
	if e, ok := s.entries[key]; ok {
		if e.fingerprint != fingerprint {
			return nil, false, ErrMismatch
		}
		if e.elem != nil {
			// A retry keeps the answer for the retries after it.
			e.expires = now.Add(e.ttl)
			s.kept.MoveToBack(e.elem)
		}
		return e, false, nil
	}
	e = &Entry{key: key, fingerprint: fingerprint, ttl: ttl, max: s.limits.MaxAnswer}
	s.entries[key] = e
	return e, true, nil
}

// Finish ends the first attempt's answer. A kept answer answers the
// retries to come; one not kept is forgotten (a retry runs again), though
// the retries already following it read it to its end.
func (s *Store) Finish(e *Entry, keep bool) {
	e.mu.Lock()
	e.finished = true
	size := int64(len(e.data)+len(e.key)) + entryOverhead
	e.wakeLocked()
	e.mu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries[e.key] != e {
		return
	}
	if !keep {
		delete(s.entries, e.key)
		return
	}
	now := s.now()
	e.size, e.expires = size, now.Add(e.ttl)
	e.elem = s.kept.PushBack(e)
	s.total += size
	s.sweepLocked(now)
}

// sweepLocked forgets the expired answers, and the oldest ones while the
// kept answers exceed the limit. The caller holds s.mu.
func (s *Store) sweepLocked(now time.Time) {
	for el := s.kept.Front(); el != nil; el = s.kept.Front() {
		e := el.Value.(*Entry)
		if s.total <= s.limits.MaxTotal && now.Before(e.expires) {
			// The list is in order of use, not of expiry: an entry
			// further on may have expired; it goes when it comes to the
			// front, or when Begin meets it.
			break
		}
		s.removeLocked(e)
	}
}

func (s *Store) removeLocked(e *Entry) {
	s.kept.Remove(e.elem)
	e.elem = nil
	s.total -= e.size
	delete(s.entries, e.key)
}

// Len returns the number of entries, running ones included, and the bytes
// the kept answers take.
func (s *Store) Len() (entries int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries), s.total
}
