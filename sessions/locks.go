package sessions

import "sync"

// localLocks are the session leases of a store only one process uses (the
// memory and bbolt stores: bbolt locks its file to one process).
type localLocks struct {
	mu   sync.Mutex
	held map[string]bool
}

func (l *localLocks) lock(id string) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[id] {
		return nil, ErrBusy
	}
	if l.held == nil {
		l.held = map[string]bool{}
	}
	l.held[id] = true
	return &localLease{l: l, id: id}, nil
}

type localLease struct {
	l    *localLocks
	id   string
	once sync.Once
}

func (x *localLease) Release() {
	x.once.Do(func() {
		x.l.mu.Lock()
		delete(x.l.held, x.id)
		x.l.mu.Unlock()
	})
}
