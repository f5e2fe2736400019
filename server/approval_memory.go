package server

import (
	"container/list"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/state/checkpoint"
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
	m.allowUntil(scope, key, m.now().Add(m.ttl))
}

// allowUntil remembers an approval until expires (or later, if it is
// remembered until later already).
func (m *approvalMemory) allowUntil(scope, key string, expires time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
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
		if c := ce.Value.(*approvedCall); expires.After(c.expires) {
			c.expires = expires
		}
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

// export returns the approvals of scope that have not lapsed, most
// recently used first: a paused run carries its thread's approvals in its
// checkpoint, to whichever process resumes it.
func (m *approvalMemory) export(scope string) []checkpoint.Always {
	m.mu.Lock()
	defer m.mu.Unlock()
	se, ok := m.scopes[scope]
	if !ok {
		return nil
	}
	now := m.now()
	var out []checkpoint.Always
	for ce := se.Value.(*scopeMemory).order.Front(); ce != nil; ce = ce.Next() {
		if c := ce.Value.(*approvedCall); now.Before(c.expires) {
			out = append(out, checkpoint.Always{Key: c.key, Expires: c.expires})
		}
	}
	return out
}

// restore adds the approvals a checkpoint carried to scope, with the
// expiry they had (least recently used first, so that their order holds);
// those that have lapsed are left out.
func (m *approvalMemory) restore(scope string, list []checkpoint.Always) {
	now := m.now()
	for i := len(list) - 1; i >= 0; i-- {
		if now.Before(list[i].Expires) {
			m.allowUntil(scope, list[i].Key, list[i].Expires)
		}
	}
}
