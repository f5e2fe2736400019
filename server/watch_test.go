package server

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// reloadCounter counts the watcher's reloads in the store's log.
type reloadCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (h reloadCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h reloadCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "chain file changed: chain reloaded" {
		h.n.Add(1)
	}
	return nil
}

// A write that comes after the file's reload timer fired, but before its
// function ran (it waits for the watcher's lock, which the write's event
// holds), used to re-arm the fired timer: the function ran twice and the
// second Done panicked with "sync: negative WaitGroup counter", ending the
// process. Editors and `git pull` make such bursts. The fired timer must
// give way to a new one, and the file be reloaded once.
func TestWatchWriteAfterTimerFired(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lookup.json")
	v1 := jsDSL("lookup", "Lookup", nil, `return {msg: {v: 1}, metadata: metadata, msgType: msgType};`)
	if err := os.WriteFile(path, []byte(v1), 0o644); err != nil {
		t.Fatal(err)
	}
	var reloads atomic.Int64
	s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{Logger: slog.New(reloadCounter{n: &reloads})})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(s.Close)
	v2 := jsDSL("lookup", "Lookup", nil, `return {msg: {v: 2}, metadata: metadata, msgType: msgType};`)
	if err := os.WriteFile(path, []byte(v2), 0o644); err != nil {
		t.Fatal(err)
	}
	fw := s.watch
	fw.settle = 10 * time.Millisecond

	fw.mu.Lock()
	fw.scheduleLocked(path) // the first write of the burst
	time.Sleep(100 * time.Millisecond)
	// The timer has fired; its function waits for fw.mu. The next write:
	fw.scheduleLocked(path)
	fw.mu.Unlock()

	deadline := time.Now().Add(5 * time.Second)
	for reloads.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the changed file was never reloaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a second, wrong, run
	fw.close()
	if n := reloads.Load(); n != 1 {
		t.Fatalf("the file was reloaded %d times, want 1", n)
	}
}

// The chains folder's chains are its own: a valid chain file inside
// node_modules (or a hidden folder) is neither loaded at start nor by the
// watcher when such a folder appears later, as ruleagent validate skips
// them too.
func TestChainsFolderSkipsNodeModules(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, id string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(jsDSL(id, id, nil, `return {msg: msg, metadata: metadata, msgType: msgType};`)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mine.json", "mine")
	write("node_modules/pkg/chain.json", "from-modules")
	write(".git/chain.json", "from-git")
	s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(s.Close)
	s.watch.settle = 10 * time.Millisecond
	if err := s.Watch(); err != nil {
		t.Fatal(err)
	}
	write("sub/node_modules/late/chain.json", "late-modules")
	time.Sleep(200 * time.Millisecond) // the new folder's event, handled
	write("sub/later.json", "later")   // the sentinel: loaded once handled
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := s.Engine("later"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher never loaded sub/later.json")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if _, ok := s.Engine("mine"); !ok {
		t.Error("mine.json was not loaded")
	}
	for _, id := range []string{"from-modules", "from-git", "late-modules"} {
		if _, ok := s.Engine(id); ok {
			t.Errorf("chain %s, from a folder that holds no chains, was loaded", id)
		}
	}
}
