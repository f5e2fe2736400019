package tasks

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// stores are the implementations under the contract: each returns two
// handles on one store (two replicas of a fleet; one process for memory
// and bolt) and a way to move its clock.
func stores() map[string]func(t *testing.T) (a, b Store, advance func(time.Duration)) {
	clock := func() (func() time.Time, func(time.Duration)) {
		var mu sync.Mutex
		now := time.Now()
		return func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
			func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	}
	return map[string]func(t *testing.T) (Store, Store, func(time.Duration)){
		"memory": func(t *testing.T) (Store, Store, func(time.Duration)) {
			m := NewMemory()
			now, adv := clock()
			m.now = now
			return m, m, adv
		},
		"bolt": func(t *testing.T) (Store, Store, func(time.Duration)) {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			s, err := NewBolt(db)
			if err != nil {
				t.Fatal(err)
			}
			now, adv := clock()
			s.now = now
			return s, s, adv
		},
		"redis": func(t *testing.T) (Store, Store, func(time.Duration)) {
			srv := redistest.Start(t)
			now, adv := clock()
			open := func() *Redis {
				opts, _ := redis.ParseURL(srv.URL)
				rdb := redis.NewClient(opts)
				t.Cleanup(func() { rdb.Close() })
				s := NewRedis(rdb, "t:")
				s.now = now
				return s
			}
			return open(), open(), adv
		},
	}
}

func TestContract(t *testing.T) {
	for name, open := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			a, b, advance := open(t)
			// b hears of what is written through a.
			heard := make(chan string, 64)
			if err := b.(Changes).Subscribe(ctx, func(id string) { heard <- id }); err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, want := range []string{"t1 created", "t1 changed"} {
					select {
					case id := <-heard:
						if id != "t1" {
							t.Errorf("heard of %q, want %s", id, want)
						}
					case <-time.After(5 * time.Second):
						t.Errorf("b did not hear: %s", want)
					}
				}
			}()
			if _, err := b.Get(ctx, "t1"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("get of nothing: %v", err)
			}
			task := &Task{ID: "t1", Owner: "ada", Tool: "slow", Replica: "a", Status: Working, TTL: time.Minute}
			if err := a.Create(ctx, task); err != nil || task.Created.IsZero() || !task.Expires.Equal(task.Created.Add(time.Minute)) {
				t.Fatalf("create: %v %+v", err, task)
			}
			if err := b.Create(ctx, &Task{ID: "t1", TTL: time.Minute}); !errors.Is(err, ErrExists) {
				t.Errorf("a second create: %v", err)
			}
			// What one replica writes, the other reads.
			got, err := b.Get(ctx, "t1")
			if err != nil || got.Owner != "ada" || got.Status != Working || got.Replica != "a" {
				t.Fatalf("get from b: %v %+v", err, got)
			}
			// A refused change stores nothing.
			refused := errors.New("no")
			if _, err := b.Update(ctx, "t1", func(t *Task) error { t.Status = Failed; return refused }); !errors.Is(err, refused) {
				t.Errorf("refused update: %v", err)
			}
			if got, _ := a.Get(ctx, "t1"); got.Status != Working {
				t.Errorf("a refused update was stored: %+v", got)
			}
			// Concurrent updates from both handles all land.
			var wg sync.WaitGroup
			for i := range 20 {
				s := a
				if i%2 == 1 {
					s = b
				}
				wg.Go(func() {
					if _, err := s.Update(ctx, "t1", func(t *Task) error {
						if t.Responses == nil {
							t.Responses = map[string]json.RawMessage{}
						}
						t.Responses[string(rune('a'+i))] = json.RawMessage(`{}`)
						return nil
					}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if got, _ := a.Get(ctx, "t1"); len(got.Responses) != 20 {
				t.Errorf("%d of 20 concurrent updates landed", len(got.Responses))
			}
			// The TTL counts from the last change.
			advance(50 * time.Second)
			if _, err := a.Update(ctx, "t1", func(t *Task) error { t.Status = Completed; t.Result = json.RawMessage(`{"content":[]}`); return nil }); err != nil {
				t.Fatal(err)
			}
			advance(50 * time.Second)
			got, err = b.Get(ctx, "t1")
			if err != nil || got.Status != Completed || string(got.Result) != `{"content":[]}` {
				t.Fatalf("a completed task within its TTL: %v %+v", err, got)
			}
			// A terminal task never changes.
			if got, err := b.Update(ctx, "t1", func(t *Task) error { t.Status = Cancelled; return nil }); !errors.Is(err, ErrTerminal) || got.Status != Completed {
				t.Errorf("update of a terminal task: %v %+v", err, got)
			}
			advance(11 * time.Second)
			if _, err := b.Get(ctx, "t1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("an expired task: %v", err)
			}
			if _, err := a.Update(ctx, "t1", func(*Task) error { return nil }); !errors.Is(err, ErrNotFound) {
				t.Errorf("update of an expired task: %v", err)
			}
		})
	}
}
