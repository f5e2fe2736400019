package health

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

func TestModel(t *testing.T) {
	ctx := t.Context()
	m := NewModel("r1")
	store := NewLink("store")
	m.Add(store, true)
	m.Add(ProbeFunc(func(context.Context) Check { return Check{Name: "audit", OK: false, Detail: "disk full"} }), false)
	if r := m.Ready(ctx); r.OK() || r.Status != StatusUnavailable || r.Replica != "r1" {
		t.Fatalf("a link never up is not ready: %+v", r)
	}
	store.Up()
	if r := m.Ready(ctx); !r.OK() || len(r.Checks) != 2 {
		t.Fatalf("ready, an informational probe failing: %+v", r)
	}
	store.Down(errors.New("connection refused"))
	time.Sleep(20 * time.Millisecond)
	store.Up()
	c := store.Check(ctx)
	if !c.OK || c.Gaps != 1 || c.LastGapMs < 20 {
		t.Errorf("gap not counted: %+v", c)
	}
	store.Down(errors.New("i/o timeout"))
	if c := store.Check(ctx); c.OK || c.Detail == "" || c.Gaps != 2 {
		t.Errorf("down: %+v", c)
	}
	if r := m.Live(ctx); !r.OK() {
		t.Errorf("liveness follows the store: %+v", r)
	}
	store.Up()
	m.Drain()
	if r := m.Ready(ctx); r.Status != StatusDraining || !r.Draining {
		t.Errorf("draining: %+v", r)
	}
}

// fixture is a registry implementation under the contract: join returns
// a registry for another replica on the same store.
type fixture struct {
	join func(t *testing.T) Registry
	srv  *redistest.Server
	ttl  time.Duration
}

func fixtures(ttl time.Duration) map[string]func(t *testing.T) *fixture {
	return map[string]func(t *testing.T) *fixture{
		"local": func(t *testing.T) *fixture {
			return &fixture{ttl: ttl, join: func(*testing.T) Registry { return NewLocal() }}
		},
		"redis": func(t *testing.T) *fixture {
			srv := redistest.Start(t)
			return &fixture{ttl: ttl, srv: srv, join: func(t *testing.T) Registry {
				opts, _ := redis.ParseURL(srv.URL)
				opts.ReadTimeout, opts.WriteTimeout, opts.ContextTimeoutEnabled = ttl/4, ttl/4, true
				rdb := redis.NewClient(opts)
				r := NewRedis(rdb, "t:", ttl)
				t.Cleanup(func() { r.Leave(context.Background()); rdb.Close() })
				return r
			}}
		},
	}
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"join, list, drain, leave", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		a := f.join(t)
		if err := a.Join(ctx, Replica{ID: "a", Addr: "127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
		if ok, err := a.Alive(ctx, "a"); !ok || err != nil {
			t.Fatalf("alive after join: %v %v", ok, err)
		}
		if ok, _ := a.Alive(ctx, "nobody"); ok {
			t.Error("an unknown replica is alive")
		}
		a.SetDraining(true)
		time.Sleep(f.ttl / 2) // a heartbeat carries it
		list, err := a.List(ctx)
		if err != nil || len(list) < 1 {
			t.Fatalf("list: %v %v", list, err)
		}
		if r := list[0]; r.ID != "a" || !r.Alive || !r.Draining || r.Addr != "127.0.0.1:1" || r.Started.IsZero() {
			t.Errorf("listed: %+v", r)
		}
		if c := a.Probe().Check(ctx); !c.OK {
			t.Errorf("heartbeat probe: %+v", c)
		}
		if err := a.Leave(ctx); err != nil {
			t.Fatal(err)
		}
		if ok, _ := a.Alive(ctx, "a"); ok {
			t.Error("alive after leave")
		}
	}},
	{"the fleet sees every replica; a dead one stops being alive", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("one machine has one replica")
		}
		ctx := t.Context()
		a, b := f.join(t), f.join(t)
		for id, r := range map[string]Registry{"a": a, "b": b} {
			if err := r.Join(ctx, Replica{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		if list, _ := b.List(ctx); len(list) != 2 {
			t.Fatalf("b sees %+v", list)
		}
		time.Sleep(f.ttl) // renewed: both still alive
		if ok, _ := b.Alive(ctx, "a"); !ok {
			t.Fatal("a's heartbeat lapsed while it beats")
		}
		// a dies: its heartbeat stops without a Leave.
		ra := a.(*Redis)
		close(ra.stop)
		ra.wg.Wait()
		died := time.Now()
		for {
			if ok, _ := b.Alive(ctx, "a"); !ok {
				break
			}
			if time.Since(died) > 2*f.ttl {
				t.Fatal("a dead replica stays alive")
			}
			time.Sleep(f.ttl / 20)
		}
		list, _ := b.List(ctx)
		var dead bool
		for _, r := range list {
			dead = dead || (r.ID == "a" && !r.Alive)
		}
		if !dead {
			t.Errorf("the dead replica is not listed as dead: %+v", list)
		}
		ra.stop = nil
	}},
	{"a frozen store: the probe reports the gap, the heartbeat comes back", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process store cannot freeze")
		}
		ctx := t.Context()
		a := f.join(t)
		if err := a.Join(ctx, Replica{ID: "a"}); err != nil {
			t.Fatal(err)
		}
		f.srv.Freeze(t)
		time.Sleep(f.ttl)
		c := a.Probe().Check(ctx)
		f.srv.Thaw(t)
		if c.OK {
			t.Fatalf("the heartbeat probe is ok while Redis is frozen: %+v", c)
		}
		deadline := time.Now().Add(2 * f.ttl)
		for !a.Probe().Check(ctx).OK {
			if time.Now().After(deadline) {
				t.Fatal("the heartbeat never came back")
			}
			time.Sleep(f.ttl / 20)
		}
		if c := a.Probe().Check(ctx); c.Gaps != 1 || c.LastGapMs <= 0 {
			t.Errorf("gap: %+v", c)
		}
		if ok, _ := a.Alive(ctx, "a"); !ok {
			t.Error("not alive after the thaw")
		}
	}},
}

func TestRegistryContract(t *testing.T) {
	for name, open := range fixtures(600 * time.Millisecond) {
		t.Run(name, func(t *testing.T) {
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
		})
	}
}
