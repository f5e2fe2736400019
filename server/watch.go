package server

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long a file must stay quiet before it is reloaded: editors
// and `git pull` write a file in several steps.
const settle = 150 * time.Millisecond

// folderWatch reloads the chains folder when its files change by hand.
// Files are checked exactly as the API checks a PUT: a broken file is
// reported (logged, and by the chains API) and the running version of its
// chain stays. A removed file undeploys its chain. What the store wrote
// itself, or a file whose content did not change, is not reloaded.
type folderWatch struct {
	s *Store

	// settle is the quiet time before a reload (the constant settle,
	// shorter in tests).
	settle time.Duration

	mu   sync.Mutex
	seen map[string][32]byte // path -> content last loaded or written
	// timers are the reloads waiting for their file to settle, by path.
	timers map[string]*reloadTimer
	w      *fsnotify.Watcher
	wg     sync.WaitGroup
	closed bool
}

// reloadTimer is one scheduled reload. A timer that has fired is never
// re-armed (its function would run twice): a write that comes after it
// fired gets a new reloadTimer, and the fired one, finding itself replaced
// in timers, does nothing.
type reloadTimer struct{ t *time.Timer }

func newFolderWatch(s *Store) *folderWatch {
	return &folderWatch{s: s, settle: settle, seen: map[string][32]byte{}, timers: map[string]*reloadTimer{}}
}

// Watch starts reloading chain files changed in the chains folder (and its
// subfolders) until Close.
func (s *Store) Watch() error {
	if s.dir == "" {
		return errors.New("the store has no chains folder to watch")
	}
	return s.watch.start(s.dir)
}

func (fw *folderWatch) start(dir string) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != dir && skippedDir(d.Name()) {
			return filepath.SkipDir
		}
		return w.Add(p)
	})
	if err != nil {
		w.Close()
		return err
	}
	fw.mu.Lock()
	fw.w = w
	fw.mu.Unlock()
	fw.wg.Add(1)
	go fw.loop(w)
	return nil
}

func (fw *folderWatch) loop(w *fsnotify.Watcher) {
	defer fw.wg.Done()
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			fw.event(w, ev)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			fw.s.log.Warn("watching the chains folder", "err", err)
		}
	}
}

func (fw *folderWatch) event(w *fsnotify.Watcher, ev fsnotify.Event) {
	name := filepath.Base(ev.Name)
	if strings.HasPrefix(name, ".") {
		return
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
			if skippedDir(name) {
				return
			}
			_ = w.Add(ev.Name)
			// Files may have landed before the watch did.
			if paths, err := chainFiles(ev.Name); err == nil {
				for _, p := range paths {
					fw.schedule(p)
				}
			}
			return
		}
	}
	if strings.HasSuffix(name, ".json") {
		fw.schedule(ev.Name)
	}
}

// schedule reloads path once it has been quiet for settle.
func (fw *folderWatch) schedule(path string) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.scheduleLocked(path)
}

// scheduleLocked is schedule; the caller holds fw.mu.
func (fw *folderWatch) scheduleLocked(path string) {
	if fw.closed {
		return
	}
	// Stop reports whether the timer was still pending: only then may it
	// be moved. One that fired is waiting for fw.mu to run its reload.
	if rt, ok := fw.timers[path]; ok && rt.t.Stop() {
		rt.t.Reset(fw.settle)
		return
	}
	rt := &reloadTimer{}
	fw.wg.Add(1)
	rt.t = time.AfterFunc(fw.settle, func() {
		defer fw.wg.Done()
		fw.mu.Lock()
		current := fw.timers[path] == rt
		if current {
			delete(fw.timers, path)
		}
		closed := fw.closed
		fw.mu.Unlock()
		if current && !closed {
			fw.reload(path)
		}
	})
	fw.timers[path] = rt
}

// reload brings the deployed chains in step with path.
func (fw *folderWatch) reload(path string) {
	s := fw.s
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		fw.forget(path)
		s.saveMu.Lock()
		defer s.saveMu.Unlock()
		s.mu.Lock()
		delete(s.broken, path)
		id := ""
		for other, f := range s.files {
			if f == path {
				id = other
			}
		}
		s.mu.Unlock()
		if id != "" {
			s.log.Info("chain file removed: chain undeployed", "chain", id, "file", path)
			s.undeploy(id)
		}
		return
	}
	if err != nil {
		s.log.Warn("reading a changed chain file", "file", path, "err", err)
		return
	}
	if !fw.changed(path, data) {
		return
	}
	id, err := s.LoadFile(path)
	if err != nil {
		s.log.Error("chain file changed but does not load: the running version stays", "file", path, "err", err)
		return
	}
	s.log.Info("chain file changed: chain reloaded", "chain", id, "file", path)
}

// expect records data as path's content, written or loaded by the store,
// so that the watcher does not load it again.
func (fw *folderWatch) expect(path string, data []byte) {
	fw.mu.Lock()
	fw.seen[path] = sha256.Sum256(data)
	fw.mu.Unlock()
}

// changed reports whether data differs from what path last held.
func (fw *folderWatch) changed(path string, data []byte) bool {
	sum := sha256.Sum256(data)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	prev, ok := fw.seen[path]
	return !ok || prev != sum
}

// forget drops what is known of path's content.
func (fw *folderWatch) forget(path string) {
	fw.mu.Lock()
	delete(fw.seen, path)
	fw.mu.Unlock()
}

// close stops watching and waits for reloads in progress.
func (fw *folderWatch) close() {
	fw.mu.Lock()
	if fw.closed {
		fw.mu.Unlock()
		return
	}
	fw.closed = true
	for p, rt := range fw.timers {
		if rt.t.Stop() {
			fw.wg.Done()
		}
		delete(fw.timers, p)
	}
	w := fw.w
	fw.mu.Unlock()
	if w != nil {
		w.Close()
	}
	fw.wg.Wait()
}
