package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// Every store writes a fenced record only while its lease is held: a run
// that gave its lease up (or lost it) cannot write the session.
func TestFencedPut(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			s := open(t)
			defer s.Close()
			k := Key{Agent: "chat", Scope: ScopeThread, Thread: "fenced"}
			l, err := s.Lock(ctx, k.ID())
			if err != nil {
				t.Fatal(err)
			}
			rec := sampleRecord(k, time.Now().UTC())
			rec.Fence(l)
			if err := s.Put(ctx, rec); err != nil {
				t.Fatalf("fenced put while held: %v", err)
			}
			l.Release()
			rec.Turns++
			if err := s.Put(ctx, rec); !errors.Is(err, ErrLeaseLost) {
				t.Fatalf("fenced put after release: %v", err)
			}
			if got, _ := s.Get(ctx, k.ID()); got.Turns != rec.Turns-1 {
				t.Errorf("the refused write landed: turns %d", got.Turns)
			}
		})
	}
}

// A process whose lease ended without its knowing (its Redis froze, the
// lease expired, another process took the session) cannot write over the
// new holder: the write is fenced by the lease key in the same script.
// Its Lost channel closes; the other process writes.
func TestStaleHolderIsFenced(t *testing.T) {
	ttl := 400 * time.Millisecond
	freeze := 2 * ttl
	srv := redistest.Start(t)
	a, b := openRedis(t, srv, ttl), openRedis(t, srv, ttl)
	staleWrite(t, srv, a, b, freeze)
}

// The figures: 6 s leases, Redis frozen 5 s.
func TestStaleHolderIsFencedFleetTimings(t *testing.T) {
	redistest.Fleet(t)
	srv := redistest.Start(t)
	a, b := openRedis(t, srv, 0), openRedis(t, srv, 0)
	staleWrite(t, srv, a, b, 5*time.Second)
}

func staleWrite(t *testing.T, srv *redistest.Server, a, b *Redis, freeze time.Duration) {
	ctx := t.Context()
	k := Key{Agent: "chat", Scope: ScopeThread, Thread: "stale"}
	la, err := a.Lock(ctx, k.ID())
	if err != nil {
		t.Fatal(err)
	}
	rec := sampleRecord(k, time.Now().UTC())
	rec.Fence(la)
	if err := a.Put(ctx, rec); err != nil {
		t.Fatal(err)
	}
	srv.FreezeFor(t, freeze)
	thawed := time.Now()
	var lb Lease
	for lb == nil {
		if lb, err = b.Lock(ctx, k.ID()); err != nil && time.Since(thawed) > a.leases.TTL() {
			t.Fatalf("the session stayed locked %s after the thaw: %v", time.Since(thawed), err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer lb.Release()
	select {
	case <-la.Lost():
	default:
		t.Fatal("b holds the session while a still believes it holds it")
	}
	got, err := b.Get(ctx, k.ID())
	if err != nil {
		t.Fatal(err)
	}
	got.Fence(lb)
	got.Turns = 7
	// a wakes up and writes its turn: refused.
	rec.Turns = 99
	if err := a.Put(ctx, rec); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("stale holder's write: %v", err)
	}
	if err := b.Put(ctx, got); err != nil {
		t.Fatalf("new holder's write: %v", err)
	}
	if final, _ := a.Get(ctx, k.ID()); final.Turns != 7 {
		t.Errorf("turns %d, want the new holder's 7", final.Turns)
	}
}
