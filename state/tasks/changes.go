package tasks

import (
	"context"
	"sync"
)

// Changes is implemented by every store of this package: it tells of the
// tasks created or changed through any handle on the store, those of
// other processes included (Redis: PUBLISH of the task's id on PREFIX
// tasks:changed after each write, heard through SUBSCRIBE; Memory and
// Bolt, which one process owns: in process). Delivery is a hint, at most
// once: a change made while a subscriber's connection was down is not
// told, so a listener still reads the store now and then.
type Changes interface {
	// Subscribe calls fn with the id of each task created or changed,
	// from the moment it returns nil until ctx ends (Redis: on a goroutine
	// that ends with ctx; in process: on the writer's goroutine). fn may
	// be called concurrently, and must neither block nor use the store.
	// It returns an error when it cannot subscribe.
	Subscribe(ctx context.Context, fn func(id string)) error
}

// fanout tells the subscribers of one process of its changes.
type fanout struct {
	mu   sync.Mutex
	next int
	subs map[int]func(string)
}

func (f *fanout) subscribe(ctx context.Context, fn func(string)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(string){}
	}
	key := f.next
	f.next++
	f.subs[key] = fn
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.subs, key)
		f.mu.Unlock()
	})
	return nil
}

func (f *fanout) changed(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fn := range f.subs {
		fn(id)
	}
}
