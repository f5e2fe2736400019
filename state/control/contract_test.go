package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/state/health"
)

// fixture is a bus implementation: join returns replica id's bus; peers
// reports whether other replicas exist (Local: one machine, one replica).
type fixture struct {
	join  func(t *testing.T, id string) Bus
	srv   *redistest.Server
	peers bool
}

const testTimeout = 600 * time.Millisecond

func fixtures() map[string]func(t *testing.T) *fixture {
	return map[string]func(t *testing.T) *fixture{
		"local": func(t *testing.T) *fixture {
			return &fixture{join: func(t *testing.T, id string) Bus {
				b := NewLocal(id, testTimeout)
				t.Cleanup(func() { b.Close() })
				return b
			}}
		},
		"redis": func(t *testing.T) *fixture {
			srv := redistest.Start(t)
			return &fixture{srv: srv, peers: true, join: func(t *testing.T, id string) Bus {
				opts, _ := redis.ParseURL(srv.URL)
				opts.ContextTimeoutEnabled = true
				opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
				rdb := redis.NewClient(opts)
				reg := health.NewRedis(rdb, "t:", time.Second)
				if err := reg.Join(t.Context(), health.Replica{ID: id}); err != nil {
					t.Fatal(err)
				}
				b, err := NewRedis(t.Context(), rdb, "t:", id, RedisOptions{Timeout: testTimeout, Ping: 300 * time.Millisecond, Alive: reg.Alive})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close(); reg.Leave(context.Background()); rdb.Close() })
				return b
			}}
		},
	}
}

// echo answers with the message's kind and run.
func echo(self string) Handler {
	return func(ctx context.Context, m Message) Reply {
		switch m.Kind {
		case "slow":
			<-ctx.Done()
			return Reply{Status: 500}
		case "cancel":
			return Reply{Status: 200, Body: json.RawMessage(fmt.Sprintf(`{"cancelled":%q,"by":%q}`, m.RunID, self))}
		}
		return Reply{Status: 404}
	}
}

// target is where a's messages go: another replica, or a itself on one
// machine.
func target(t *testing.T, f *fixture, a Bus) (Bus, string) {
	if !f.peers {
		return a, "a"
	}
	return f.join(t, "b"), "b"
}

func send(t *testing.T, from Bus, to string, run string) Reply {
	t.Helper()
	r, err := from.Send(t.Context(), to, Message{Kind: "cancel", RunID: run})
	if err != nil {
		t.Fatalf("send to %s: %v", to, err)
	}
	return r
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"a message reaches its replica, and its reply the sender", func(t *testing.T, f *fixture) {
		a := f.join(t, "a")
		b, to := target(t, f, a)
		b.Handle(echo(to))
		r := send(t, a, to, "run-1")
		if r.Status != 200 || string(r.Body) != fmt.Sprintf(`{"cancelled":"run-1","by":%q}`, to) {
			t.Fatalf("reply %d %s", r.Status, r.Body)
		}
		if r, _ := a.Send(t.Context(), to, Message{Kind: "other"}); r.Status != 404 {
			t.Errorf("the handler's own status: %d", r.Status)
		}
	}},
	{"many at once: each sender gets its own reply", func(t *testing.T, f *fixture) {
		a := f.join(t, "a")
		b, to := target(t, f, a)
		b.Handle(echo(to))
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Go(func() {
				run := fmt.Sprintf("run-%d", i)
				if r := send(t, a, to, run); string(r.Body) != fmt.Sprintf(`{"cancelled":%q,"by":%q}`, run, to) {
					t.Errorf("%s got %s", run, r.Body)
				}
			})
		}
		wg.Wait()
	}},
	{"a replica that is gone: the sender knows at once", func(t *testing.T, f *fixture) {
		a := f.join(t, "a")
		start := time.Now()
		if _, err := a.Send(t.Context(), "nobody", Message{Kind: "cancel"}); !errors.Is(err, ErrUnreachable) {
			t.Fatalf("send to nobody: %v", err)
		}
		if f.peers {
			// A replica that left: its heartbeat and its subscription are
			// gone.
			b := f.join(t, "b")
			b.Handle(echo("b"))
			send(t, a, "b", "r")
			b.Close()
			if _, err := a.Send(t.Context(), "b", Message{Kind: "cancel"}); !errors.Is(err, ErrUnreachable) {
				t.Fatalf("send to a closed replica: %v", err)
			}
		}
		if took := time.Since(start); took > testTimeout/2 {
			t.Errorf("it took %s to learn the replica is gone", took)
		}
	}},
	{"an owner that does not answer: ErrNoAnswer after the timeout; no handler: 503", func(t *testing.T, f *fixture) {
		a := f.join(t, "a")
		b, to := target(t, f, a)
		if r := send(t, a, to, "r"); r.Status != 503 {
			t.Errorf("no handler: %d", r.Status)
		}
		b.Handle(echo(to))
		start := time.Now()
		if _, err := a.Send(t.Context(), to, Message{Kind: "slow"}); !errors.Is(err, ErrNoAnswer) {
			t.Fatalf("slow: %v", err)
		}
		if took := time.Since(start); took < testTimeout || took > 3*testTimeout {
			t.Errorf("gave up after %s, timeout %s", took, testTimeout)
		}
	}},
	{"a frozen store: the gap is reported, consumption resumes", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process bus has no store to freeze")
		}
		outage(t, f, func() { f.srv.FreezeFor(t, 2*time.Second) })
	}},
	{"a restarted store: resubscribed, consumption resumes", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process bus has no store to restart")
		}
		outage(t, f, func() {
			f.srv.Kill(t)
			time.Sleep(time.Second)
			f.srv.Start(t)
		})
	}},
}

// outage checks that b keeps consuming across fault, and says there was a
// gap.
func outage(t *testing.T, f *fixture, fault func()) {
	a, b := f.join(t, "a"), f.join(t, "b")
	b.Handle(echo("b"))
	send(t, a, "b", "before")
	fault()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := a.Send(t.Context(), "b", Message{Kind: "cancel", RunID: "after"})
		if err == nil && r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never consumed again: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := b.Probe().Check(t.Context())
	if !c.OK || c.Gaps == 0 || c.LastGapMs <= 0 {
		t.Errorf("the subscription's probe hides the gap: %+v", c)
	}
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

// The figures: Redis frozen for 5 s, and killed and restarted.
func TestOutagesFleetTimings(t *testing.T) {
	redistest.Fleet(t)
	f := fixtures()["redis"](t)
	outage(t, f, func() { f.srv.FreezeFor(t, 5*time.Second) })
}
