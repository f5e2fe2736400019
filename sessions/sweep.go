package sessions

import (
	"sync"
	"time"
)

// sweepEvery is how often a store's writes also remove expired sessions.
const sweepEvery = time.Minute

// sweeper says when a store's periodic removal of expired sessions is due.
// It rides on writes rather than a goroutine: a store with no writes has
// nothing new to expire, and lets reads skip what has.
type sweeper struct {
	mu   sync.Mutex
	last time.Time
}

// due reports whether a sweep is due at now, and if so counts it as done.
func (s *sweeper) due(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last.IsZero() {
		s.last = now
		return false
	}
	if now.Sub(s.last) < sweepEvery {
		return false
	}
	s.last = now
	return true
}
