package server

import (
	"container/list"
	"sync"
	"time"
)

// Bounds of what "always" approvals are remembered: per thread, the
// calls used least recently go first beyond alwaysPerThread; the threads
// used least recently go first beyond alwaysThreads; and an approval lapses
// alwaysTTL after it was given, used or not.
const (
	alwaysPerThread = 256
	alwaysThreads   = 10000
	alwaysTTL       = 24 * time.Hour
)

// approvalMemory remembers the calls a person approved "always", per
// thread of one caller (the scope), so that the same exact call on that
// thread asks nobody. It is bounded and expiring: see the constants above.
type approvalMemory struct {
	perThread, threads int
	ttl                time.Duration
	now                func() time.Time

	mu     sync.Mutex
	scopes map[string]*list.Element // scope -> element of order (*scopeMemory)
	order  list.List                // most recently used first
}

// scopeMemory is one thread's approvals.
type scopeMemory struct {
	scope string
	calls map[string]*list.Element // call key -> element of order (*approvedCall)
	order list.List                // most recently used first
}

type approvedCall struct {
	key     string
	expires time.Time
}

func newApprovalMemory(perThread, threads int, ttl time.Duration, now func() time.Time) *approvalMemory {
	return &approvalMemory{perThread: perThread, threads: threads, ttl: ttl, now: now, scopes: map[string]*list.Element{}}
}

// allowed reports whether the call key was approved "always" in scope and
// has not lapsed.
func (m *approvalMemory) allowed(scope, key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	se, ok := m.scopes[scope]
	if !ok {
		return false
	}
	sm := se.Value.(*scopeMemory)
	ce, ok := sm.calls[key]
	if !ok {
		return false
	}
	if !m.now().Before(ce.Value.(*approvedCall).expires) {
		sm.order.Remove(ce)
		delete(sm.calls, key)
		if len(sm.calls) == 0 {
			m.order.Remove(se)
			delete(m.scopes, scope)
		}
		return false
	}
	sm.order.MoveToFront(ce)
	m.order.MoveToFront(se)
	return true
}

// allow remembers that the call key was approved "always" in scope.
func (m *approvalMemory) allow(scope, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	expires := m.now().Add(m.ttl)
	se, ok := m.scopes[scope]
	if !ok {
		sm := &scopeMemory{scope: scope, calls: map[string]*list.Element{}}
		se = m.order.PushFront(sm)
		m.scopes[scope] = se
		for m.order.Len() > m.threads {
			old := m.order.Back()
			m.order.Remove(old)
			delete(m.scopes, old.Value.(*scopeMemory).scope)
		}
	}
	m.order.MoveToFront(se)
	sm := se.Value.(*scopeMemory)
	if ce, ok := sm.calls[key]; ok {
		ce.Value.(*approvedCall).expires = expires
		sm.order.MoveToFront(ce)
		return
	}
	sm.calls[key] = sm.order.PushFront(&approvedCall{key: key, expires: expires})
	for sm.order.Len() > m.perThread {
		old := sm.order.Back()
		sm.order.Remove(old)
		delete(sm.calls, old.Value.(*approvedCall).key)
	}
}

// size returns how many threads and calls are remembered.
func (m *approvalMemory) size() (threads, calls int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, se := range m.scopes {
		calls += len(se.Value.(*scopeMemory).calls)
	}
	return len(m.scopes), calls
}
