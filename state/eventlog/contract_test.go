package eventlog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// fixture is one implementation under the contract. open returns a Log
// on the fixture's store: for Redis another replica's; for bbolt the
// process restarted (the previous Log is closed first, as a process that
// ends closes its log).
type fixture struct {
	o    Options
	open func(t testing.TB) Log
	srv  *redistest.Server
}

func testOptions() Options {
	return Options{FlushInterval: 10 * time.Millisecond, MaxEvents: 50, MaxBytes: 1 << 20,
		Retention: 300 * time.Millisecond, MaxAge: time.Minute}
}

func fixtures(o Options, persist bool) map[string]func(t testing.TB) *fixture {
	return map[string]func(t testing.TB) *fixture{
		"bolt": func(t testing.TB) *fixture {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{InitialMmapSize: 64 << 20})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			var prev Log
			return &fixture{o: o, open: func(t testing.TB) Log {
				if prev != nil {
					prev.Close()
				}
				l, err := NewBolt(db, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				prev = l
				return l
			}}
		},
		"redis": func(t testing.TB) *fixture {
			srv := redistest.StartWith(t, redistest.Options{Persist: persist})
			return &fixture{o: o, srv: srv, open: func(t testing.TB) Log {
				opts, _ := redis.ParseURL(srv.URL)
				opts.ReadTimeout, opts.WriteTimeout, opts.DialTimeout = time.Second, time.Second, time.Second
				opts.ContextTimeoutEnabled = true
				rdb := redis.NewClient(opts)
				l := NewRedis(rdb, "t:", o)
				t.Cleanup(func() { l.Close(); rdb.Close() })
				return l
			}}
		},
	}
}

func ev(i int) []byte {
	return fmt.Appendf(nil, `{"type":"TEXT_MESSAGE_CONTENT","delta":"chunk %d"}`, i)
}

// collect follows run from after until it returns, or fails the test
// after d.
func collect(t *testing.T, l Log, runID string, after uint64, d time.Duration) ([]Entry, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out []Entry
	for e, err := range l.Follow(ctx, runID, after) {
		if err != nil {
			return out, err
		}
		out = append(out, Entry{ID: e.ID, Data: append([]byte(nil), e.Data...)})
	}
	return out, nil
}

// checkRun checks that entries are events from..to of ev, in order.
func checkRun(t *testing.T, got []Entry, from, to int) {
	t.Helper()
	if len(got) != to-from+1 {
		t.Fatalf("got %d events, want %d..%d (%d)", len(got), from, to, to-from+1)
	}
	for i, e := range got {
		if want := from + i; e.ID != uint64(want) || string(e.Data) != string(ev(want)) {
			t.Fatalf("event %d: id %d %q, want %d %q", i, e.ID, e.Data, want, ev(want))
		}
	}
}

var contract = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	{"ids, rejoin after an id, live events, the end", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		l := f.open(t)
		w, err := l.Start(ctx, Meta{RunID: "r1", Owner: "a", ChainID: "chat", ThreadID: "t1", UserID: "u1", Source: "agui"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 10; i++ {
			if id := w.Append(ev(i)); id != uint64(i) {
				t.Fatalf("append %d got id %d", i, id)
			}
		}
		// A follower that joins mid-run gets what it missed, then the live
		// events, and returns after the end.
		done := make(chan []Entry)
		go func() {
			got, err := collect(t, l, "r1", 4, 5*time.Second)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		time.Sleep(3 * f.o.FlushInterval)
		for i := 11; i <= 20; i++ {
			w.Append(ev(i))
		}
		if err := w.End(ctx, "success"); err != nil {
			t.Fatal(err)
		}
		if id := w.Append(ev(99)); id != 0 {
			t.Errorf("append after end: id %d", id)
		}
		checkRun(t, <-done, 5, 20)
		// From the start, after the end, from another replica.
		got, err := collect(t, f.open(t), "r1", 0, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, got, 1, 20)
	}},
	{"meta, lists, duplicates, unknown runs", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		l := f.open(t)
		t0 := time.Now().UTC().Truncate(time.Millisecond)
		a, err := l.Start(ctx, Meta{RunID: "ra", Owner: "a", ChainID: "chat", UserID: "alice", StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		b, err := l.Start(ctx, Meta{RunID: "rb", Owner: "b", ChainID: "other", UserID: "bob", StartedAt: t0.Add(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Start(ctx, Meta{RunID: "ra", Owner: "c"}); !errors.Is(err, ErrExists) {
			t.Errorf("duplicate run id: %v", err)
		}
		if err := a.SetStatus(ctx, StatusWaiting); err != nil {
			t.Fatal(err)
		}
		b.End(ctx, "error")
		// The end is written with the next flush: wait for it (a fixed
		// sleep of a few flush intervals failed under a loaded CI).
		waitEnded(t, l, "rb")
		m, err := l.Meta(ctx, "ra")
		if err != nil || m.Owner != "a" || m.ChainID != "chat" || m.UserID != "alice" || m.Status != StatusWaiting ||
			!m.StartedAt.Equal(t0) || m.Ended() {
			t.Errorf("meta ra: %+v %v", m, err)
		}
		if m, err := l.Meta(ctx, "rb"); err != nil || m.Status != "error" || !m.Ended() {
			t.Errorf("meta rb: %+v %v", m, err)
		}
		all, err := l.List(ctx, Filter{})
		if err != nil || len(all) != 2 || all[0].RunID != "rb" {
			t.Errorf("list: %+v %v", all, err)
		}
		if live, _ := l.List(ctx, Filter{Live: true}); len(live) != 1 || live[0].RunID != "ra" {
			t.Errorf("live: %+v", live)
		}
		if bobs, _ := l.List(ctx, Filter{UserID: "bob", Owner: "b"}); len(bobs) != 1 {
			t.Errorf("bob's: %+v", bobs)
		}
		if _, err := l.Meta(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("meta of nothing: %v", err)
		}
		if _, err := collect(t, l, "nope", 0, time.Second); !errors.Is(err, ErrNotFound) {
			t.Errorf("follow of nothing: %v", err)
		}
		a.End(ctx, "cancelled")
	}},
	{"bounded: the oldest events go, ids show the gap", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		l := f.open(t)
		w, _ := l.Start(ctx, Meta{RunID: "long", Owner: "a"})
		for i := 1; i <= 200; i++ {
			w.Append(ev(i))
			if i%10 == 0 {
				time.Sleep(2 * f.o.FlushInterval) // several batches
			}
		}
		w.End(ctx, "success")
		got, err := collect(t, l, "long", 0, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > f.o.MaxEvents+20 || got[0].ID == 1 || got[len(got)-1].ID != 200 {
			t.Fatalf("kept %d events, %d..%d; bound %d", len(got), got[0].ID, got[len(got)-1].ID, f.o.MaxEvents)
		}
		checkRun(t, got, int(got[0].ID), 200)
	}},
	{"retention: an ended run goes", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		l := f.open(t)
		w, _ := l.Start(ctx, Meta{RunID: "brief", Owner: "a"})
		w.Append(ev(1))
		w.End(ctx, "success")
		waitEnded(t, l, "brief")
		if _, err := l.Meta(ctx, "brief"); err != nil {
			t.Fatalf("right after the end: %v", err)
		}
		time.Sleep(f.o.Retention + 100*time.Millisecond)
		if _, err := l.Meta(ctx, "brief"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after the retention: %v", err)
		}
		if list, _ := l.List(ctx, Filter{}); len(list) != 0 {
			t.Errorf("listed after the retention: %+v", list)
		}
	}},
	{"an owner gone: another continues the run after its last event", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		a := f.open(t)
		w, _ := a.Start(ctx, Meta{RunID: "moved", Owner: "a"})
		for i := 1; i <= 5; i++ {
			w.Append(ev(i))
		}
		// A follower waits on the paused run across the move.
		done := make(chan []Entry)
		go func() {
			got, err := collect(t, a, "moved", 0, 5*time.Second)
			if err != nil && f.srv != nil {
				t.Error(err)
			}
			done <- got
		}()
		w.SetStatus(ctx, StatusWaiting)
		time.Sleep(5 * f.o.FlushInterval)
		b := f.open(t) // bbolt: the process restarted
		if _, err := b.Continue(ctx, "moved", "someone-else", "b"); !errors.Is(err, ErrOwned) {
			t.Errorf("continue from the wrong owner: %v", err)
		}
		w2, err := b.Continue(ctx, "moved", "a", "b")
		if err != nil {
			m, merr := b.Meta(ctx, "moved")
			t.Fatalf("%v (meta %+v %v)", err, m, merr)
		}
		for i := 6; i <= 8; i++ {
			if id := w2.Append(ev(i)); id != uint64(i) {
				t.Fatalf("continued id %d, want %d", id, i)
			}
		}
		w2.End(ctx, "success")
		if m, _ := b.Meta(ctx, "moved"); m.Owner != "b" {
			t.Errorf("owner %q", m.Owner)
		}
		if f.srv != nil {
			checkRun(t, <-done, 1, 8)
		} else {
			<-done // the restarted process's follower ended with its log
		}
		got, err := collect(t, b, "moved", 0, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		checkRun(t, got, 1, 8)
		if _, err := b.Continue(ctx, "moved", "", "c"); !errors.Is(err, ErrEnded) {
			t.Errorf("continue after the end: %v", err)
		}
	}},
	{"many followers, a fast writer: nothing lost or repeated", func(t *testing.T, f *fixture) {
		ctx := t.Context()
		l := f.open(t)
		w, _ := l.Start(ctx, Meta{RunID: "busy", Owner: "a"})
		const n = 40 // within MaxEvents: every follower gets all
		var wg sync.WaitGroup
		for k := range 8 {
			wg.Go(func() {
				time.Sleep(time.Duration(k) * time.Millisecond)
				got, err := collect(t, l, "busy", 0, 10*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				checkRun(t, got, 1, n)
			})
		}
		for i := 1; i <= n; i++ {
			w.Append(ev(i))
			if i%7 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		w.End(ctx, "success")
		wg.Wait()
	}},
}

// faults are the store failures a run must outlive: events appended while
// the store is down are kept and stored when it is back, and followers go
// on; the followers' link reports the gap.
func faultCase(name string, fault func(t *testing.T, f *fixture)) struct {
	name string
	run  func(t *testing.T, f *fixture)
} {
	return struct {
		name string
		run  func(t *testing.T, f *fixture)
	}{name, func(t *testing.T, f *fixture) {
		if f.srv == nil {
			t.Skip("the embedded store is the process itself: it has no outage of its own")
		}
		ctx := t.Context()
		l := f.open(t)
		w, err := l.Start(ctx, Meta{RunID: "outage", Owner: "a"})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan []Entry)
		follower := f.open(t) // on another replica
		go func() {
			got, err := collect(t, follower, "outage", 0, 30*time.Second)
			if err != nil {
				t.Error(err)
			}
			done <- got
		}()
		for i := 1; i <= 10; i++ {
			w.Append(ev(i))
		}
		time.Sleep(5 * f.o.FlushInterval)
		stop := make(chan struct{})
		appended := make(chan int)
		go func() {
			// The run goes on during the outage.
			i := 11
			for ; ; i++ {
				select {
				case <-stop:
					appended <- i - 1
					return
				case <-time.After(5 * time.Millisecond):
					w.Append(ev(i))
				}
			}
		}()
		fault(t, f)
		close(stop)
		last := <-appended
		w.End(ctx, "success")
		got := <-done
		checkRun(t, got, 1, last)
		probes := follower.(*Redis).Probes()
		if c := probes[1].Check(ctx); !c.OK || c.Gaps == 0 {
			t.Errorf("the followers' link does not report the gap: %+v", c)
		}
		if err := w.Err(); err == nil {
			t.Error("the writer does not report the failed writes")
		}
	}}
}

var faults = []struct {
	name string
	run  func(t *testing.T, f *fixture)
}{
	faultCase("the store restarts mid-run", func(t *testing.T, f *fixture) {
		f.srv.Kill(t)
		time.Sleep(500 * time.Millisecond)
		f.srv.Start(t)
		time.Sleep(500 * time.Millisecond)
	}),
	faultCase("the store freezes mid-run", func(t *testing.T, f *fixture) {
		f.srv.FreezeFor(t, 2500*time.Millisecond)
		time.Sleep(500 * time.Millisecond)
	}),
}

func TestContract(t *testing.T) {
	for name, open := range fixtures(testOptions(), true) {
		t.Run(name, func(t *testing.T) {
			for _, c := range contract {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
			// Within the bounds: a follower that lags through the outage
			// still gets everything.
			o := testOptions()
			o.MaxEvents = 100000
			open := fixtures(o, true)[name]
			for _, c := range faults {
				t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
			}
		})
	}
}

// The outage: Redis frozen 5 s.
func TestFrozenFiveSeconds(t *testing.T) {
	redistest.Fleet(t)
	o := testOptions()
	o.MaxEvents = 100000
	f := fixtures(o, true)["redis"](t)
	faultCase("frozen 5 s", func(t *testing.T, f *fixture) {
		f.srv.FreezeFor(t, 5*time.Second)
		time.Sleep(time.Second)
	}).run(t, f)
}

// waitEnded waits, at most 5 s, until run runID's meta says it ended
// (End is written with a flush, asynchronously).
func waitEnded(t *testing.T, l Log, runID string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := l.Meta(t.Context(), runID)
		if err == nil && m.Ended() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not ended after 5 s: %+v %v", runID, m, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
