package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// TestMain doubles as a lease holder in a process of its own, for the
// holder-dies case: it takes the lease, says so, and waits to be killed.
func TestMain(m *testing.M) {
	if url := os.Getenv("LEASE_TEST_HOLD"); url != "" {
		opts, err := redis.ParseURL(url)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		ttl, _ := time.ParseDuration(os.Getenv("LEASE_TEST_TTL"))
		l := NewRedis(redis.NewClient(opts), "t:", Options{TTL: ttl, Owner: "child"})
		x, err := l.Acquire(context.Background(), os.Getenv("LEASE_TEST_NAME"))
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println("held", x.Token())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fixture is one implementation under the contract: peer returns another
// Leaser on the same backend (another replica, for Redis); srv is the
// Redis behind it (nil for Local).
type fixture struct {
	ttl  time.Duration
	peer func(t *testing.T) Leaser
	srv  *redistest.Server
}

func fixtures(ttl time.Duration) map[string]func(t *testing.T) *fixture {
	return map[string]func(t *testing.T) *fixture{
		"local": func(t *testing.T) *fixture {
			l := NewLocal()
			t.Cleanup(func() { l.Close() })
			return &fixture{ttl: ttl, peer: func(*testing.T) Leaser { return l }}
		},
		"redis": func(t *testing.T) *fixture {
			srv := redistest.Start(t)
			f := &fixture{ttl: ttl, srv: srv}
			f.peer = func(t *testing.T) Leaser { return redisLeaser(t, srv, ttl) }
			return f
		},
	}
}

func redisLeaser(t *testing.T, srv *redistest.Server, ttl time.Duration) *Redis {
	opts, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Short timeouts, as a replica configured for a fleet has them.
	opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = ttl/4, ttl/4, ttl/4
	opts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opts)
	l := NewRedis(rdb, "t:", Options{TTL: ttl, Owner: "test"})
	t.Cleanup(func() { l.Close(); rdb.Close() })
	return l
}

func isLost(x Lease) bool {
	select {
	case <-x.Lost():
		return true
	default:
		return false
	}
}

// acquireWithin retries until the lease is free or d passes.
func acquireWithin(t *testing.T, l Leaser, name string, d time.Duration) Lease {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		x, err := l.Acquire(t.Context(), name)
		if err == nil {
			return x
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease %s not free within %s: %v", name, d, err)
		}
		time.Sleep(d / 50)
	}
}

// The contract both Leasers keep.
var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"exclusive, and tokens grow", func(t *testing.T, f *fixture) {
		a, b := f.peer(t), f.peer(t)
		x, err := a.Acquire(t.Context(), "thread-1")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(t.Context(), "thread-1"); !errors.Is(err, ErrHeld) {
			t.Fatalf("second acquire: %v", err)
		}
		y, err := b.Acquire(t.Context(), "thread-2")
		if err != nil {
			t.Fatal(err)
		}
		if y.Token() <= x.Token() {
			t.Fatalf("other name: %v, token %d after %d", err, y.Token(), x.Token())
		}
		x.Release()
		x.Release()
		if isLost(x) || x.Err() != nil {
			t.Errorf("a released lease is not lost: %v", x.Err())
		}
		z, err := b.Acquire(t.Context(), "thread-1")
		if err != nil {
			t.Fatal(err)
		}
		if z.Token() <= y.Token() {
			t.Fatalf("after release: %v, token %d after %d", err, z.Token(), y.Token())
		}
		if z.Name() != "thread-1" {
			t.Errorf("name %q", z.Name())
		}
		y.Release()
		z.Release()
	}},
	{"concurrent acquirers: exactly one wins", func(t *testing.T, f *fixture) {
		ls := []Leaser{f.peer(t), f.peer(t), f.peer(t)}
		var mu sync.Mutex
		var won []Lease
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() {
				x, err := ls[i%3].Acquire(t.Context(), "contended")
				if err == nil {
					mu.Lock()
					won = append(won, x)
					mu.Unlock()
				} else if !errors.Is(err, ErrHeld) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("%d winners", len(won))
		}
		won[0].Release()
	}},
	{"renewed while held", func(t *testing.T, f *fixture) {
		a, b := f.peer(t), f.peer(t)
		x, err := a.Acquire(t.Context(), "long-run")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * f.ttl)
		if isLost(x) {
			t.Fatalf("lost while renewed: %v", x.Err())
		}
		if _, err := b.Acquire(t.Context(), "long-run"); !errors.Is(err, ErrHeld) {
			t.Fatalf("taken while renewed: %v", err)
		}
		x.Release()
		acquireWithin(t, b, "long-run", f.ttl).Release()
	}},
	{"close ends every lease", func(t *testing.T, f *fixture) {
		a := f.peer(t)
		x, err := a.Acquire(t.Context(), "closing")
		if err != nil {
			t.Fatal(err)
		}
		a.Close()
		if !isLost(x) || !errors.Is(x.Err(), ErrClosed) {
			t.Fatalf("after close: lost %v, %v", isLost(x), x.Err())
		}
		if _, err := a.Acquire(t.Context(), "other"); !errors.Is(err, ErrClosed) {
			t.Errorf("acquire after close: %v", err)
		}
		x.Release()
		if f.srv != nil {
			// Close deleted the key: another replica takes it at once.
			acquireWithin(t, f.peer(t), "closing", f.ttl/10).Release()
		}
	}},
	{"a holder that dies releases within the TTL", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("in-process leases die with their process: nothing outlives it")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LEASE_TEST_HOLD="+f.srv.URL, "LEASE_TEST_TTL="+f.ttl.String(), "LEASE_TEST_NAME=dying")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if !strings.HasPrefix(line, "held") {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child: %q", line)
		}
		b := f.peer(t)
		time.Sleep(f.ttl) // the child renews: still held
		if _, err := b.Acquire(t.Context(), "dying"); !errors.Is(err, ErrHeld) {
			t.Errorf("while the holder lives: %v", err)
		}
		cmd.Process.Kill()
		cmd.Wait()
		killed := time.Now()
		acquireWithin(t, b, "dying", 2*f.ttl).Release()
		if took := time.Since(killed); took > f.ttl+f.ttl/2 {
			t.Errorf("free %s after the holder died; TTL %s", took, f.ttl)
		}
	}},
	{"a frozen store: the holder gives up before another takes it", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process store cannot freeze")
		}
		a, b := f.peer(t), f.peer(t)
		x, err := a.Acquire(t.Context(), "frozen")
		if err != nil {
			t.Fatal(err)
		}
		f.srv.Freeze(t)
		select {
		case <-x.Lost():
		case <-time.After(2 * f.ttl):
			f.srv.Thaw(t)
			t.Fatal("the holder still believes it holds the lease after 2 TTLs of frozen Redis")
		}
		time.Sleep(f.ttl / 2)
		f.srv.Thaw(t)
		if !errors.Is(x.Err(), ErrLost) {
			t.Errorf("cause: %v", x.Err())
		}
		y := acquireWithin(t, b, "frozen", f.ttl)
		if y.Token() <= x.Token() {
			t.Errorf("token %d after %d", y.Token(), x.Token())
		}
		y.Release()
		// The holder's Leaser works again.
		acquireWithin(t, a, "frozen-after", f.ttl).Release()
	}},
	{"a short flap loses nothing", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process store cannot freeze")
		}
		a := f.peer(t)
		x, err := a.Acquire(t.Context(), "flap")
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(f.ttl / 3) // just renewed
		f.srv.FreezeFor(t, f.ttl/6)
		time.Sleep(f.ttl)
		if isLost(x) {
			t.Fatalf("lost over a flap of TTL/6: %v", x.Err())
		}
		x.Release()
	}},
	{"a restart that lost the data: lost, and tokens still grow", func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("an in-process store has no restart of its own")
		}
		a, b := f.peer(t), f.peer(t)
		x, err := a.Acquire(t.Context(), "restart")
		if err != nil {
			t.Fatal(err)
		}
		f.srv.Restart(t)
		select {
		case <-x.Lost():
		case <-time.After(2 * f.ttl):
			t.Fatal("the holder never learnt its lease was gone")
		}
		y := acquireWithin(t, b, "restart", f.ttl)
		if y.Token() <= x.Token() {
			t.Errorf("token %d after %d: a stale holder could not be fenced", y.Token(), x.Token())
		}
		y.Release()
	}},
}

func TestContract(t *testing.T) {
	for name, open := range fixtures(600 * time.Millisecond) {
		t.Run(name, func(t *testing.T) {
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
		})
	}
}

// The figures: 6 s leases, Redis frozen for 5 s, a holder killed.
func TestContractFleetTimings(t *testing.T) {
	redistest.Fleet(t)
	f := fixtures(DefaultTTL)["redis"](t)
	for _, c := range contract {
		if strings.HasPrefix(c.name, "a") {
			t.Run(c.name, func(t *testing.T) { c.run(t, f) })
		}
	}
	// The freeze: 5 s stops every renewal of a 6 s lease for
	// longer than the holder may trust it, and the thread is free at once
	// after the thaw.
	a, b := f.peer(t), f.peer(t)
	x, err := a.Acquire(t.Context(), "frozen-5s")
	if err != nil {
		t.Fatal(err)
	}
	f.srv.FreezeFor(t, 5*time.Second)
	thawed := time.Now()
	y := acquireWithin(t, b, "frozen-5s", DefaultTTL)
	if !isLost(x) {
		t.Error("another replica took the lease while its holder still trusted it")
	}
	if took := time.Since(thawed); took > 1500*time.Millisecond {
		t.Errorf("the thread stayed blocked %s after the thaw", took)
	}
	y.Release()
}
