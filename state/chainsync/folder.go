package chainsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Folder is the chain store of one machine: the *.json files under a
// folder (recursively, hidden files and folders skipped). A chain's id is
// its ruleChain.id, or its file's name without .json. Versions count the
// changes seen since the store opened (each chain starts at 1); deletions
// leave tombstones in memory only.
type Folder struct {
	dir string

	mu     sync.Mutex
	chains map[string]*folderChain
	byPath map[string]string // path -> chain id
	feed   []Change          // the last maxFeed changes
	rev    int64
	wake   chan struct{} // closed and replaced at each change
	timers map[string]*time.Timer
	w      *fsnotify.Watcher
	closed bool
	wg     sync.WaitGroup
}

type folderChain struct {
	path    string
	version int64
	hash    string
	deleted bool
	by      string
	at      time.Time
}

// maxFeed bounds the changes kept for followers.
const maxFeed = 1000

// settle is how long a file must stay quiet before it is read: editors
// and `git pull` write a file in several steps.
const settle = 150 * time.Millisecond

// OpenFolder reads the chains under dir; with watch, files changed by
// hand become changes of the store, until Close.
func OpenFolder(dir string, watch bool) (*Folder, error) {
	f := &Folder{dir: dir, chains: map[string]*folderChain{}, byPath: map[string]string{}, wake: make(chan struct{}),
		timers: map[string]*time.Timer{}}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		} else if strings.HasSuffix(p, ".json") {
			f.load(p, "")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chains folder %s: %w", dir, err)
	}
	f.feed, f.rev = nil, 0 // what was there is the start, not a change
	if !watch {
		return f, nil
	}
	if f.w, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := f.w.Add(d); err != nil {
			f.w.Close()
			return nil, err
		}
	}
	f.wg.Go(f.watch)
	return f, nil
}

// idOf is the chain id of the file at path holding dsl.
func idOf(path string, dsl []byte) string {
	if id, err := ChainID(dsl); err == nil && id != "" {
		return id
	}
	return strings.TrimSuffix(filepath.Base(path), ".json")
}

// load (re)reads the file at path and records what changed; the caller
// holds mu, or is OpenFolder.
func (f *Folder) load(path, by string) {
	dsl, err := os.ReadFile(path)
	prev, had := f.byPath[path]
	if err != nil {
		if had {
			delete(f.byPath, path)
			f.tombstone(prev, by)
		}
		return
	}
	id, h := idOf(path, dsl), Hash(dsl)
	if had && prev != id {
		// The file now holds another chain: the one it held is gone.
		delete(f.byPath, path)
		f.tombstone(prev, by)
	}
	c := f.chains[id]
	if c != nil && !c.deleted && c.hash == h && c.path == path {
		return
	}
	if c == nil {
		c = &folderChain{}
		f.chains[id] = c
	}
	c.path, c.hash, c.deleted, c.by, c.at = path, h, false, by, time.Now().UTC()
	c.version++
	f.byPath[path] = id
	f.changed(id, c)
}

func (f *Folder) tombstone(id, by string) {
	c := f.chains[id]
	if c == nil || c.deleted {
		return
	}
	c.deleted, c.hash, c.by, c.at = true, "", by, time.Now().UTC()
	c.version++
	f.changed(id, c)
}

// changed appends a change to the feed and wakes the followers.
func (f *Folder) changed(id string, c *folderChain) {
	f.rev++
	f.feed = append(f.feed, Change{Rev: f.rev, ID: id, Version: c.version, Hash: c.hash, Deleted: c.deleted})
	if len(f.feed) > maxFeed {
		f.feed = slices.Delete(f.feed, 0, len(f.feed)-maxFeed)
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *Folder) chain(id string, c *folderChain) (Chain, error) {
	out := Chain{ID: id, Version: c.version, Hash: c.hash, Deleted: c.deleted, UpdatedBy: c.by, UpdatedAt: c.at}
	if !c.deleted {
		dsl, err := os.ReadFile(c.path)
		if err != nil {
			return Chain{}, fmt.Errorf("chain %q: %w", id, err)
		}
		out.DSL = dsl
	}
	return out, nil
}

func (f *Folder) check(id string, expect int64) (*folderChain, error) {
	c := f.chains[id]
	v := int64(0)
	if c != nil {
		v = c.version
	}
	if expect >= 0 && v != expect {
		return c, fmt.Errorf("%w: chain %q is at version %d", ErrConflict, id, v)
	}
	return c, nil
}

// Put implements Store: the file is written atomically, where the chain
// was loaded from, else at DIR/ID.json.
func (f *Folder) Put(_ context.Context, id string, dsl []byte, expect int64, by string) (Chain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.check(id, expect)
	if err != nil {
		return Chain{}, err
	}
	if c != nil && !c.deleted && c.hash == Hash(dsl) {
		return f.chain(id, c)
	}
	path := filepath.Join(f.dir, id+".json")
	if c != nil && c.path != "" && !c.deleted {
		path = c.path
	}
	if err := writeAtomic(path, dsl); err != nil {
		return Chain{}, err
	}
	f.load(path, by)
	return f.chain(id, f.chains[id])
}

// Delete implements Store: the chain's file is removed.
func (f *Folder) Delete(_ context.Context, id string, expect int64, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.check(id, expect)
	if err != nil {
		return err
	}
	if c == nil || c.deleted {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	delete(f.byPath, c.path)
	f.tombstone(id, by)
	return nil
}

// Get implements Store.
func (f *Folder) Get(_ context.Context, id string) (Chain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.chains[id]
	if c == nil {
		return Chain{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return f.chain(id, c)
}

// List implements Store.
func (f *Folder) List(context.Context) ([]Chain, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Chain, 0, len(f.chains))
	for id, c := range f.chains {
		ch, err := f.chain(id, c)
		if err != nil {
			continue // removed meanwhile: the watcher reports it
		}
		out = append(out, ch)
	}
	return out, nil
}

// Rev implements Store.
func (f *Folder) Rev(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev, nil
}

// Changes implements Store. A follower further behind than the changes
// kept sees the gap in Rev.
func (f *Folder) Changes(ctx context.Context, after int64) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		for {
			f.mu.Lock()
			var next []Change
			for _, c := range f.feed {
				if c.Rev > after {
					next = append(next, c)
				}
			}
			wake := f.wake
			f.mu.Unlock()
			for _, c := range next {
				if !yield(c, nil) {
					return
				}
				after = c.Rev
			}
			select {
			case <-ctx.Done():
				yield(Change{}, ctx.Err())
				return
			case <-wake:
			}
		}
	}
}

// watch turns the folder's file events into changes, once each file has
// settled.
func (f *Folder) watch() {
	for {
		select {
		case ev, ok := <-f.w.Events:
			if !ok {
				return
			}
			f.event(ev)
		case _, ok := <-f.w.Errors:
			if !ok {
				return
			}
		}
	}
}

func (f *Folder) event(ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	if strings.HasPrefix(name, ".") {
		return
	}
	if ev.Has(fsnotify.Create) {
		if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
			_ = f.w.Add(ev.Name)
			return
		}
	}
	if !strings.HasSuffix(name, ".json") {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	if t := f.timers[ev.Name]; t != nil {
		t.Reset(settle)
		return
	}
	path := ev.Name
	f.timers[path] = time.AfterFunc(settle, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.timers, path)
		if !f.closed {
			f.load(path, "")
		}
	})
}

// Close stops watching.
func (f *Folder) Close() error {
	f.mu.Lock()
	f.closed = true
	for _, t := range f.timers {
		t.Stop()
	}
	w := f.w
	f.mu.Unlock()
	if w == nil {
		return nil
	}
	err := w.Close()
	f.wg.Wait()
	return err
}

// writeAtomic writes data to path through a hidden temporary file and a
// rename, so that no reader (nor the watcher) sees half a file.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".chain-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
