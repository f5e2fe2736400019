package checkpoint

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/state/health"
)

// fixture is a store under the contract, as replica id sees it: replica
// returns the store of a live replica (joined to the registry); restart
// reopens the store after a restart (bbolt: the process; Redis: the
// server, persistent); kill makes a replica dead.
type fixture struct {
	replica func(t *testing.T, id string) Store
	kill    func(t *testing.T, id string)
	restart func(t *testing.T) Store
}

func fixtures() map[string]func(t *testing.T) *fixture {
	return map[string]func(t *testing.T) *fixture{
		"bolt": func(t *testing.T) *fixture {
			path := filepath.Join(t.TempDir(), "state.db")
			var db *bolt.DB
			var reg *health.Local
			open := func(t *testing.T) Store {
				if db != nil {
					db.Close()
				}
				var err error
				if db, err = bolt.Open(path, 0o600, nil); err != nil {
					t.Fatal(err)
				}
				reg = health.NewLocal()
				s, err := NewBolt(db, reg.Alive)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			t.Cleanup(func() { db.Close() })
			var s Store
			return &fixture{
				// One machine, one replica: the process.
				replica: func(t *testing.T, id string) Store {
					if s == nil {
						s = open(t)
					}
					reg.Join(t.Context(), health.Replica{ID: id})
					return s
				},
				kill: func(t *testing.T, id string) { reg.Leave(t.Context()) },
				restart: func(t *testing.T) Store {
					s = open(t)
					return s
				},
			}
		},
		"memory": func(t *testing.T) *fixture {
			reg := health.NewLocal()
			s := NewMemory(reg.Alive)
			return &fixture{
				replica: func(t *testing.T, id string) Store {
					reg.Join(t.Context(), health.Replica{ID: id})
					return s
				},
				kill: func(t *testing.T, id string) { reg.Leave(t.Context()) },
			}
		},
		"redis": func(t *testing.T) *fixture {
			srv := redistest.StartWith(t, redistest.Options{Persist: true})
			regs := map[string]*health.Redis{}
			client := func(t *testing.T) *redis.Client {
				opts, _ := redis.ParseURL(srv.URL)
				opts.ContextTimeoutEnabled = true
				rdb := redis.NewClient(opts)
				t.Cleanup(func() { rdb.Close() })
				return rdb
			}
			hb := health.NewRedis(nil, "t:", 0)
			return &fixture{
				replica: func(t *testing.T, id string) Store {
					rdb := client(t)
					reg := health.NewRedis(rdb, "t:", time.Second)
					if err := reg.Join(t.Context(), health.Replica{ID: id}); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { reg.Leave(context.Background()) })
					regs[id] = reg
					return NewRedis(rdb, "t:", hb.Key)
				},
				kill: func(t *testing.T, id string) { regs[id].Leave(t.Context()) },
				restart: func(t *testing.T) Store {
					srv.Restart(t)
					return NewRedis(client(t), "t:", hb.Key)
				},
			}
		},
	}
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"save, load, fences", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		s := f.replica(t, "a")
		if _, err := s.Load(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("load of nothing: %v", err)
		}
		cp := &Checkpoint{RunID: "r1", Data: []byte("state-1"), Holder: "a", ThreadID: "t-1", Owner: "alice"}
		if err := s.Save(ctx, cp); err != nil || cp.Fence == 0 || cp.Saved.IsZero() {
			t.Fatalf("save: %v %+v", err, cp)
		}
		first := cp.Fence
		if err := s.Save(ctx, &Checkpoint{RunID: "r1", Data: []byte("other")}); !errors.Is(err, ErrExists) {
			t.Errorf("a second first pause: %v", err)
		}
		cp.Data = []byte("state-2")
		if err := s.Save(ctx, cp); err != nil || cp.Fence <= first {
			t.Fatalf("save again: %v, fence %d after %d", err, cp.Fence, first)
		}
		if err := s.Save(ctx, &Checkpoint{RunID: "r1", Data: []byte("stale"), Fence: first}); !errors.Is(err, ErrFenced) {
			t.Errorf("save with a stale fence: %v", err)
		}
		got, err := s.Load(ctx, "r1")
		if err != nil || string(got.Data) != "state-2" || got.Holder != "a" || got.Fence != cp.Fence || got.ThreadID != "t-1" || got.Owner != "alice" {
			t.Fatalf("load: %+v %v", got, err)
		}
		if err := s.Delete(ctx, "r1", first); !errors.Is(err, ErrFenced) {
			t.Errorf("delete with a stale fence: %v", err)
		}
		if err := s.Delete(ctx, "r1", cp.Fence); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, "r1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("load after delete: %v", err)
		}
		if err := s.Delete(ctx, "r1", cp.Fence); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete again: %v", err)
		}
	}},
	{"claims: a live holder keeps it, a released or dead one hands it on", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		a := f.replica(t, "a")
		cp := &Checkpoint{RunID: "r2", Data: []byte("paused"), Holder: "a"}
		if err := a.Save(ctx, cp); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Claim(ctx, "r2", "a"); !errors.Is(err, ErrClaimed) {
			t.Fatalf("the holder claims what it holds: %v", err)
		}
		if oneMachine(a) {
			// One machine, one replica: it releases, then claims.
			if err := a.Release(ctx, "r2", cp.Fence); err != nil {
				t.Fatal(err)
			}
			c, err := a.Claim(ctx, "r2", "a")
			if err != nil || c.Fence <= cp.Fence || string(c.Data) != "paused" || c.Holder != "a" {
				t.Fatalf("claim after release: %+v %v", c, err)
			}
			if err := a.Release(ctx, "r2", cp.Fence); !errors.Is(err, ErrFenced) {
				t.Errorf("release with the fence before the claim: %v", err)
			}
			return
		}
		b := f.replica(t, "b")
		if _, err := b.Claim(ctx, "r2", "b"); !errors.Is(err, ErrClaimed) {
			t.Fatalf("claim of a live holder's: %v", err)
		}
		if err := a.Release(ctx, "r2", cp.Fence); err != nil {
			t.Fatal(err)
		}
		c, err := b.Claim(ctx, "r2", "b")
		if err != nil || c.Holder != "b" || string(c.Data) != "paused" {
			t.Fatalf("claim after release: %+v %v", c, err)
		}
		// b dies holding it: c can take it, and b's fence is stale then.
		f.kill(t, "b")
		c2, err := f.replica(t, "c").Claim(ctx, "r2", "c")
		if err != nil || c2.Fence <= c.Fence {
			t.Fatalf("claim of a dead holder's: %+v %v", c2, err)
		}
		if err := b.Save(ctx, &Checkpoint{RunID: "r2", Data: []byte("b's"), Holder: "b", Fence: c.Fence}); !errors.Is(err, ErrFenced) {
			t.Errorf("the presumed-dead holder saved: %v", err)
		}
	}},
	{"concurrent answers: exactly one claim wins", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		a := f.replica(t, "a")
		cp := &Checkpoint{RunID: "r3", Data: []byte("x")}
		if err := a.Save(ctx, cp); err != nil {
			t.Fatal(err)
		}
		// One machine: its one replica answers twelve times at once; a
		// fleet: two other replicas do.
		ids, stores := []string{"a"}, []Store{a}
		if !oneMachine(a) {
			ids, stores = []string{"b", "c"}, []Store{f.replica(t, "b"), f.replica(t, "c")}
		}
		var mu sync.Mutex
		var wins []string
		var wg sync.WaitGroup
		for i := range 12 {
			wg.Go(func() {
				// The answers race; a winner holds on (its run goes on).
				k := i % len(ids)
				c, err := stores[k].Claim(ctx, "r3", ids[k])
				if err == nil {
					mu.Lock()
					wins = append(wins, c.Holder)
					mu.Unlock()
				} else if !errors.Is(err, ErrClaimed) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(wins) != 1 {
			t.Fatalf("%d claims won: %v", len(wins), wins)
		}
	}},
	{"lists and expiry", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		s := f.replica(t, "a")
		for _, id := range []string{"l1", "l2"} {
			if err := s.Save(ctx, &Checkpoint{RunID: id, Data: []byte(id), Holder: "a"}); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
		}
		short := &Checkpoint{RunID: "l3", Data: []byte("x"), Expires: time.Now().Add(300 * time.Millisecond), ThreadID: "t-3", Owner: "bob"}
		if err := s.Save(ctx, short); err != nil {
			t.Fatal(err)
		}
		list, err := s.List(ctx)
		if err != nil || len(list) != 3 || list[0].RunID != "l1" || list[0].Holder != "a" || list[0].Data != nil ||
			list[2].ThreadID != "t-3" || list[2].Owner != "bob" {
			t.Fatalf("list: %+v %v", list, err)
		}
		time.Sleep(400 * time.Millisecond)
		if _, err := s.Load(ctx, "l3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("an expired checkpoint loads: %v", err)
		}
		if list, _ := s.List(ctx); len(list) != 2 {
			t.Errorf("list after expiry: %+v", list)
		}
	}},
	{"survives a restart", func(t *testing.T, f *fixture) {
		if f.restart == nil {
			t.Skip("in memory: gone with the process")
		}
		ctx := t.Context()
		s := f.replica(t, "a")
		cp := &Checkpoint{RunID: "r4", Data: []byte("before the restart"), Holder: "a"}
		if err := s.Save(ctx, cp); err != nil {
			t.Fatal(err)
		}
		s = f.restart(t)
		got, err := s.Load(ctx, "r4")
		if err != nil || string(got.Data) != "before the restart" {
			t.Fatalf("after the restart: %+v %v", got, err)
		}
		// The holder before the restart is gone (bbolt: the previous
		// process): another replica (the new process) claims it.
		f.kill(t, "a")
		s = f.replica(t, "after")
		c, err := s.Claim(ctx, "r4", "after")
		if err != nil || c.Fence <= cp.Fence {
			t.Fatalf("claim after the restart: %+v %v", c, err)
		}
	}},
}

// oneMachine reports whether s is an embedded store: one replica, the
// process.
func oneMachine(s Store) bool {
	switch s.(type) {
	case *Bolt, *Memory:
		return true
	}
	return false
}

func TestContract(t *testing.T) {
	for name, open := range fixtures() {
		t.Run(name, func(t *testing.T) {
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
		})
	}
}
