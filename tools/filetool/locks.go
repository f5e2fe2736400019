package filetool

import "sync"

// PathLocks serialises work on the same path within one tool instance, so
// that two concurrent calls cannot interleave a read-modify-write (an edit, an
// append, a create's existence check) and lose one of the updates. Entries
// are reference-counted and dropped when nobody holds them, so the map does
// not grow with every path ever touched.
type PathLocks struct {
	mu    sync.Mutex
	locks map[string]*pathLock
}

type pathLock struct {
	mu      sync.Mutex
	holders int
}

// Lock blocks until key is free and returns the function that frees it.
func (l *PathLocks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*pathLock{}
	}
	pl := l.locks[key]
	if pl == nil {
		pl = &pathLock{}
		l.locks[key] = pl
	}
	pl.holders++
	l.mu.Unlock()

	pl.mu.Lock()
	return func() {
		pl.mu.Unlock()
		l.mu.Lock()
		pl.holders--
		if pl.holders == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
}

// Held reports how many keys are locked or awaited; tests use it to check
// that entries are released.
func (l *PathLocks) Held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}
