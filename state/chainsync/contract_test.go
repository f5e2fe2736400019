package chainsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

func dsl(id, note string) []byte {
	return fmt.Appendf(nil, `{"ruleChain":{"id":%q,"name":%q},"metadata":{"nodes":[]}}`, id, note)
}

// fixture is a store under the contract: open returns a replica's view
// of it (Redis: another client; Folder: the one machine's store); dir is
// the folder (Folder only); srv the Redis.
type fixture struct {
	open func(t *testing.T) Store
	dir  string
	srv  *redistest.Server
}

func fixtures(persist bool) map[string]func(t *testing.T) *fixture {
	return map[string]func(t *testing.T) *fixture{
		"folder": func(t *testing.T) *fixture {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "seeded.json"), dsl("seeded", "from the start"), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFolder(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return &fixture{dir: dir, open: func(*testing.T) Store { return f }}
		},
		"redis": func(t *testing.T) *fixture {
			srv := redistest.StartWith(t, redistest.Options{Persist: persist})
			open := func(t *testing.T) Store {
				opts, _ := redis.ParseURL(srv.URL)
				opts.ContextTimeoutEnabled = true
				opts.ReadTimeout, opts.DialTimeout = 500*time.Millisecond, 500*time.Millisecond
				rdb := redis.NewClient(opts)
				t.Cleanup(func() { rdb.Close() })
				return NewRedis(rdb, "t:")
			}
			// The fleet was seeded once.
			if _, err := open(t).Put(t.Context(), "seeded", dsl("seeded", "from the start"), 0, "seed"); err != nil {
				t.Fatal(err)
			}
			return &fixture{srv: srv, open: open}
		},
	}
}

// applier records what a replica deploys; fail makes Apply of an id fail.
type applier struct {
	mu      sync.Mutex
	running map[string]string // id -> hash
	fail    map[string]bool
	applied chan string
}

func newApplier() *applier {
	return &applier{running: map[string]string{}, fail: map[string]bool{}, applied: make(chan string, 100)}
}

func (a *applier) Apply(_ context.Context, c Chain) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fail[c.ID] {
		return errors.New("unknown component type \"x/nope\"")
	}
	a.running[c.ID] = c.Hash
	a.applied <- c.ID
	return nil
}

func (a *applier) Remove(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.running, id)
	a.applied <- "-" + id
	return nil
}

func (a *applier) hash(id string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running[id]
}

// waitFor waits until cond holds, at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func startSyncer(t *testing.T, s Store) (*Syncer, *applier) {
	a := newApplier()
	sy := NewSyncer(s, a)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sy.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return sy, a
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"versions, conflicts, tombstones", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		s := f.open(t)
		c, err := s.Put(ctx, "chat", dsl("chat", "v1"), 0, "a")
		if err != nil || c.Version != 1 || c.Hash != Hash(dsl("chat", "v1")) || c.UpdatedBy != "a" {
			t.Fatalf("first put: %+v %v", c, err)
		}
		if _, err := s.Put(ctx, "chat", dsl("chat", "v2"), 0, "b"); !errors.Is(err, ErrConflict) {
			t.Errorf("put expecting none: %v", err)
		}
		if same, err := s.Put(ctx, "chat", dsl("chat", "v1"), 1, "b"); err != nil || same.Version != 1 {
			t.Errorf("the same DSL again: %+v %v", same, err)
		}
		c2, err := s.Put(ctx, "chat", dsl("chat", "v2"), 1, "b")
		if err != nil || c2.Version != 2 {
			t.Fatalf("put expecting 1: %+v %v", c2, err)
		}
		if _, err := s.Put(ctx, "chat", dsl("chat", "v3"), 1, "c"); !errors.Is(err, ErrConflict) {
			t.Errorf("a stale editor's put: %v", err)
		}
		got, err := s.Get(ctx, "chat")
		if err != nil || string(got.DSL) != string(dsl("chat", "v2")) || got.Version != 2 {
			t.Errorf("get: %+v %v", got, err)
		}
		if err := s.Delete(ctx, "chat", 1, "c"); !errors.Is(err, ErrConflict) {
			t.Errorf("stale delete: %v", err)
		}
		if err := s.Delete(ctx, "chat", AnyVersion, "c"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "chat", AnyVersion, "c"); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete again: %v", err)
		}
		if got, err := s.Get(ctx, "chat"); err != nil || !got.Deleted || got.Version != 3 {
			t.Errorf("tombstone: %+v %v", got, err)
		}
		// A seed never brings a deleted chain back, nor overwrites one.
		src := t.TempDir()
		os.WriteFile(filepath.Join(src, "chat.json"), dsl("chat", "old copy"), 0o644)
		os.WriteFile(filepath.Join(src, "seeded.json"), dsl("seeded", "old copy"), 0o644)
		os.WriteFile(filepath.Join(src, "fresh.json"), dsl("fresh", "new"), 0o644)
		folder, err := OpenFolder(src, false)
		if err != nil {
			t.Fatal(err)
		}
		added, err := Seed(ctx, s, folder, "seed")
		if err != nil || len(added) != 1 || added[0] != "fresh" {
			t.Errorf("seed added %v: %v", added, err)
		}
		if got, _ := s.Get(ctx, "seeded"); string(got.DSL) != string(dsl("seeded", "from the start")) {
			t.Errorf("the seed overwrote a chain: %s", got.DSL)
		}
		list, err := s.List(ctx)
		if err != nil || len(list) != 3 {
			t.Errorf("list: %d %v", len(list), err)
		}
	}},
	{"a deploy reaches every replica within a second", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		a, b := f.open(t), f.open(t)
		syA, runA := startSyncer(t, a)
		syB, runB := startSyncer(t, b)
		waitFor(t, 2*time.Second, "caught up", func() bool { return syA.CaughtUp() && syB.CaughtUp() })
		if runB.hash("seeded") == "" {
			t.Fatal("b does not run the chain that was there")
		}
		c, err := a.Put(ctx, "support", dsl("support", "v1"), 0, "replica-a")
		if err != nil {
			t.Fatal(err)
		}
		took := waitFor(t, time.Second, "b runs the deploy", func() bool { return runB.hash("support") == c.Hash })
		t.Logf("a deploy reached the other replica in %s", took)
		waitFor(t, time.Second, "a runs its own deploy", func() bool { return runA.hash("support") == c.Hash })
		if err := b.Delete(ctx, "support", AnyVersion, "replica-b"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Second, "a removes the deleted chain", func() bool { return runA.hash("support") == "" })
		for _, st := range syB.States() {
			if st.Err != "" {
				t.Errorf("state %+v", st)
			}
		}
	}},
	{"a replica that missed changes catches up at start", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		s := f.open(t)
		for i := range 5 {
			if _, err := s.Put(ctx, fmt.Sprintf("c%d", i), dsl(fmt.Sprintf("c%d", i), "x"), AnyVersion, "a"); err != nil {
				t.Fatal(err)
			}
		}
		s.Delete(ctx, "c0", AnyVersion, "a")
		sy, run := startSyncer(t, f.open(t))
		waitFor(t, 2*time.Second, "caught up", sy.CaughtUp)
		for i := 1; i < 5; i++ {
			if run.hash(fmt.Sprintf("c%d", i)) == "" {
				t.Errorf("c%d missing", i)
			}
		}
		if run.hash("c0") != "" {
			t.Error("a deleted chain runs")
		}
		if c := sy.Probe().Check(ctx); !c.OK {
			t.Errorf("probe: %+v", c)
		}
	}},
	{"a chain a replica cannot deploy is reported, never silently different", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		sy, run := startSyncer(t, f.open(t))
		waitFor(t, 2*time.Second, "caught up", sy.CaughtUp)
		run.mu.Lock()
		run.fail["broken"] = true
		run.mu.Unlock()
		if _, err := f.open(t).Put(ctx, "broken", dsl("broken", "x"), 0, "a"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Second, "the probe reports it", func() bool { return !sy.Probe().Check(ctx).OK })
		if c := sy.Probe().Check(ctx); c.Detail == "" {
			t.Errorf("no detail: %+v", c)
		}
	}},
	{"the chains folder edited by hand", func(t *testing.T, f *fixture) {
		if f.dir == "" {
			t.Skip("a fleet's chains change through the store, not a folder")
		}
		sy, run := startSyncer(t, f.open(t))
		waitFor(t, 2*time.Second, "caught up", sy.CaughtUp)
		os.WriteFile(filepath.Join(f.dir, "by-hand.json"), dsl("by-hand", "v1"), 0o644)
		waitFor(t, 2*time.Second, "deployed", func() bool { return run.hash("by-hand") == Hash(dsl("by-hand", "v1")) })
		os.Remove(filepath.Join(f.dir, "by-hand.json"))
		waitFor(t, 2*time.Second, "removed", func() bool { return run.hash("by-hand") == "" })
	}},
	{"the store restarts: the syncer lists it again and goes on", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("the folder has no outage of its own")
		}
		ctx := t.Context()
		sy, run := startSyncer(t, f.open(t))
		waitFor(t, 2*time.Second, "caught up", sy.CaughtUp)
		f.srv.Kill(t)
		time.Sleep(300 * time.Millisecond)
		f.srv.Start(t)
		if _, err := f.open(t).Put(ctx, "after", dsl("after", "x"), 0, "a"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "deployed after the restart", func() bool { return run.hash("after") != "" })
		if c := sy.Probe().Check(ctx); !c.OK {
			t.Errorf("probe after the restart: %+v", c)
		}
	}},
}

func TestContract(t *testing.T) {
	for name, open := range fixtures(true) {
		t.Run(name, func(t *testing.T) {
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
		})
	}
}

// A Redis restarted without persistence lost the chains: replicas keep
// running theirs and say the store lost them.
func TestStoreLostItsChains(t *testing.T) {
	f := fixtures(false)["redis"](t)
	sy, run := startSyncer(t, f.open(t))
	waitFor(t, 2*time.Second, "caught up", sy.CaughtUp)
	f.srv.Restart(t)
	waitFor(t, 5*time.Second, "the loss is reported", func() bool {
		c := sy.Probe().Check(t.Context())
		return !c.OK && c.Gaps > 0
	})
	if run.hash("seeded") == "" {
		t.Error("the chain was undeployed because the store lost it")
	}
}
