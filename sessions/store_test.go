package sessions

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// openRedis opens a Redis store on srv whose leases live ttl, as another
// process of the fleet would.
func openRedis(t *testing.T, srv *redistest.Server, ttl time.Duration) *Redis {
	c, err := redisconn.Open(t.Context(), srv.URL, redisconn.Options{Timeout: ttl / 4})
	if err != nil {
		t.Fatal(err)
	}
	s := NewRedis(c, RedisOptions{LeaseTTL: ttl})
	t.Cleanup(func() { s.Close(); c.Close() })
	return s
}

// stores returns one fresh store of each kind; Redis runs as a real
// redis-server.
func stores(t *testing.T) map[string]func(t *testing.T) Store {
	return map[string]func(t *testing.T) Store{
		"memory": func(t *testing.T) Store { return NewMemory() },
		"bolt": func(t *testing.T) Store {
			s, err := OpenBolt(filepath.Join(t.TempDir(), "s.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) Store {
			srv := redistest.Start(t)
			s, err := OpenRedis(t.Context(), srv.URL+"?prefix=test:")
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

func sampleRecord(k Key, when time.Time) *Record {
	r := NewRecord(k)
	r.Messages = []events.Message{
		{ID: "u1", Role: events.RoleUser, Content: "look", Parts: []events.ContentPart{{Type: "text", Text: "look"}, {Type: "image", URL: "https://x/y.png"}}},
		{ID: "a1", Role: events.RoleAssistant, Reasoning: "hmm", ToolCalls: []events.ToolCall{{ID: "c1", Name: "lookup", Arguments: `{"k":1}`}}},
		{ID: "t1", Role: events.RoleTool, ToolCallID: "c1", Content: "Error (timeout)", Error: "timeout"},
		{ID: "a2", Role: events.RoleAssistant, Content: "It timed out."},
	}
	r.Created, r.Updated = when, when
	return r
}

// Every store keeps the same contract: compare-and-swap writes, leases,
// lists, deletes, expiry.
func TestStoreContract(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			k := Key{Agent: "chat", Scope: ScopeUserThread, User: "alice", Thread: "t1"}
			if _, err := s.Get(ctx, k.ID()); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get of nothing: %v", err)
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			rec := sampleRecord(k, now)
			if err := s.Put(ctx, rec); err != nil || rec.Version != 1 {
				t.Fatalf("first put: %v, version %d", err, rec.Version)
			}
			got, err := s.Get(ctx, k.ID())
			if err != nil || !reflect.DeepEqual(got, rec) {
				t.Fatalf("get: %v\n got %+v\nwant %+v", err, got, rec)
			}
			// A writer holding an old version loses.
			stale := *got
			stale.Version = 0
			stale.Turns = 99
			if err := s.Put(ctx, &stale); !errors.Is(err, ErrConflict) {
				t.Errorf("stale put: %v", err)
			}
			got.Turns = 2
			if err := s.Put(ctx, got); err != nil || got.Version != 2 {
				t.Errorf("second put: %v %d", err, got.Version)
			}
			if again, _ := s.Get(ctx, k.ID()); again.Turns != 2 {
				t.Errorf("turns %d", again.Turns)
			}

			// One lease per session.
			l1, err := s.Lock(ctx, k.ID())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Lock(ctx, k.ID()); !errors.Is(err, ErrBusy) {
				t.Errorf("second lock: %v", err)
			}
			other, err := s.Lock(ctx, "chat:thread:other")
			if err != nil {
				t.Errorf("lock of another session: %v", err)
			}
			other.Release()
			l1.Release()
			l1.Release()
			l2, err := s.Lock(ctx, k.ID())
			if err != nil {
				t.Errorf("lock after release: %v", err)
			} else {
				l2.Release()
			}

			// Lists: filters, newest first, limit.
			bob := sampleRecord(Key{Agent: "chat", Scope: ScopeUser, User: "bob"}, now.Add(time.Second))
			other2 := sampleRecord(Key{Agent: "other", Scope: ScopeGlobal}, now.Add(2*time.Second))
			for _, r := range []*Record{bob, other2} {
				if err := s.Put(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			ids := func(f Filter) []string {
				list, err := s.List(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, i := range list {
					out = append(out, i.ID)
				}
				return out
			}
			if got := ids(Filter{}); !reflect.DeepEqual(got, []string{"other:global", "chat:user:bob", "chat:user_thread:alice:t1"}) {
				t.Errorf("list: %v", got)
			}
			if got := ids(Filter{Agent: "chat", Limit: 1}); !reflect.DeepEqual(got, []string{"chat:user:bob"}) {
				t.Errorf("list chat limit 1: %v", got)
			}
			if got := ids(Filter{UserID: "alice", ThreadID: "t1"}); !reflect.DeepEqual(got, []string{k.ID()}) {
				t.Errorf("list alice t1: %v", got)
			}
			list, _ := s.List(ctx, Filter{UserID: "alice"})
			if len(list) != 1 || list[0].Messages != 4 || list[0].Turns != 2 {
				t.Errorf("info: %+v", list)
			}

			// Delete, then a session can start afresh at version 0.
			if err := s.Delete(ctx, bob.ID); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, bob.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("second delete: %v", err)
			}
			if _, err := s.Get(ctx, bob.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("get after delete: %v", err)
			}
			bob.Version = 0
			if err := s.Put(ctx, bob); err != nil {
				t.Errorf("put after delete: %v", err)
			}

			// An expired session is gone: not read, not listed, and a new
			// session takes its place at version 0.
			old := sampleRecord(Key{Agent: "chat", Scope: ScopeUser, User: "carol"}, now)
			old.Expires = time.Now().Add(-time.Second)
			if err := s.Put(ctx, old); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(ctx, old.ID); !errors.Is(err, ErrNotFound) {
				t.Errorf("get of an expired session: %v", err)
			}
			if got := ids(Filter{UserID: "carol"}); len(got) != 0 {
				t.Errorf("expired session listed: %v", got)
			}
			fresh := sampleRecord(Key{Agent: "chat", Scope: ScopeUser, User: "carol"}, now)
			fresh.Expires = time.Now().Add(time.Hour)
			if err := s.Put(ctx, fresh); err != nil || fresh.Version != 1 {
				t.Errorf("put over an expired session: %v %d", err, fresh.Version)
			}
			if _, err := s.Get(ctx, fresh.ID); err != nil {
				t.Errorf("get of a live session: %v", err)
			}

			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Get(context.Background(), k.ID()); !errors.Is(err, ErrClosed) {
				t.Errorf("get after close: %v", err)
			}
		})
	}
}

// Two Redis stores are two processes sharing one Redis: what one writes
// the other reads, and a lease held by one is refused to the other. A
// lease is renewed while it is held; the lease of a process that died
// ends with its TTL.
func TestRedisSharedBetweenProcesses(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	open := func() *Redis { return openRedis(t, srv, 300*time.Millisecond) }
	a, b := open(), open()
	rec := sampleRecord(Key{Agent: "chat", Scope: ScopeThread, Thread: "t"}, time.Now().UTC())
	if err := a.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, rec.ID); err != nil || len(got.Messages) != 4 {
		t.Fatalf("b reads a's session: %v", err)
	}
	la, err := a.Lock(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // over three TTLs: only renewal keeps it
	if _, err := b.Lock(ctx, rec.ID); !errors.Is(err, ErrBusy) {
		t.Errorf("b takes a lease a holds: %v", err)
	}
	la.Release()
	lb, err := b.Lock(ctx, rec.ID)
	if err != nil {
		t.Fatalf("b after a released: %v", err)
	}
	lb.Release()

	// A lease left by a process that died (no one renews it).
	if err := a.rdb.Set(ctx, a.leases.Key(rec.ID), "dead-process", a.leases.TTL()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, rec.ID); !errors.Is(err, ErrBusy) {
		t.Errorf("lock while the dead lease lasts: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := b.Lock(ctx, rec.ID)
		if err == nil {
			l.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead lease never ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bbolt locks its file: a second opener is told who holds it.
func TestBoltFileIsLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := OpenBolt(path); !errors.Is(err, ErrLocked) {
		t.Errorf("second open: %v", err)
	}
}

func TestOpenSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		spec, name string
	}{{"memory", "memory"}, {"bolt", "bolt " + filepath.Join(dir, BoltFile)}, {"bolt:" + filepath.Join(dir, "x.db"), "bolt " + filepath.Join(dir, "x.db")}} {
		s, err := Open(t.Context(), c.spec, dir)
		if err != nil || s.Name() != c.name {
			t.Errorf("%s: %v %v", c.spec, s, err)
			continue
		}
		s.Close()
	}
	for _, bad := range []string{"mongo://x", "redis://127.0.0.1:1/0"} {
		if _, err := Open(t.Context(), bad, dir); err == nil {
			t.Errorf("%s opened", bad)
		}
	}
}

// Expired sessions leave the in-process stores with a later write, not
// only when read.
func TestExpiredSessionsAreSwept(t *testing.T) {
	ctx := t.Context()
	clock := time.Now()
	now := func() time.Time { return clock }
	mem := NewMemory()
	mem.now = now
	bs, err := OpenBolt(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	bs.now = now
	count := map[string]func() int{
		"memory": func() int { mem.mu.Lock(); defer mem.mu.Unlock(); return len(mem.recs) },
		"bolt": func() int {
			n := 0
			_ = bs.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bucketRecords).Stats().KeyN; return nil })
			return n
		},
	}
	for name, s := range map[string]Store{"memory": mem, "bolt": bs} {
		short := sampleRecord(Key{Agent: "a", Scope: ScopeUser, User: "short"}, clock)
		short.Expires = clock.Add(time.Second)
		long := sampleRecord(Key{Agent: "a", Scope: ScopeUser, User: "long"}, clock)
		for _, r := range []*Record{short, long} {
			if err := s.Put(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if n := count[name](); n != 2 {
			t.Fatalf("%s: %d sessions", name, n)
		}
		clock = clock.Add(2 * sweepEvery)
		if err := s.Put(ctx, long); err != nil {
			t.Fatal(err)
		}
		if n := count[name](); n != 1 {
			t.Errorf("%s: %d sessions after the sweep, want 1", name, n)
		}
	}
}
