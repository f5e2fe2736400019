package idempotency

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func fp(s string) (f [32]byte) {
	copy(f[:], s)
	return f
}

func collect(t *testing.T, e *Entry) []string {
	t.Helper()
	var got []string
	if err := e.Replay(t.Context(), func(b []byte) error { got = append(got, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// The first attempt writes; a retry with the same key and fingerprint gets
// the same entry and reads it whole; another fingerprint is refused; an
// answer not kept is forgotten, so the next attempt runs.
func TestBeginFinishReplay(t *testing.T) {
	s := New(Limits{MaxAnswer: 1 << 10, MaxTotal: 1 << 20})
	e, first, err := s.Begin("k", fp("a"), time.Minute)
	if err != nil || !first {
		t.Fatalf("first Begin: %v %v", first, err)
	}
	e.Respond(200, map[string]string{"X-Run-Id": "run-1"})
	e.Frame([]byte("one"))
	e.Frame([]byte("two"))
	s.Finish(e, true)

	r, first, err := s.Begin("k", fp("a"), time.Minute)
	if err != nil || first || r != e {
		t.Fatalf("retry Begin: %v %v", first, err)
	}
	if status, h := r.Response(); status != 200 || h["X-Run-Id"] != "run-1" {
		t.Fatalf("response %d %v", status, h)
	}
	if got := collect(t, r); strings.Join(got, ",") != "one,two" {
		t.Fatalf("frames %q", got)
	}
	if _, _, err := s.Begin("k", fp("b"), time.Minute); !errors.Is(err, ErrMismatch) {
		t.Fatalf("another request with the key: %v", err)
	}

	f, _, _ := s.Begin("failed", fp("a"), time.Minute)
	s.Finish(f, false)
	if _, first, _ := s.Begin("failed", fp("a"), time.Minute); !first {
		t.Fatal("an answer that was not kept answered a retry")
	}
}

// A retry that comes while the first attempt runs follows it: the frames
// so far, then each as it is written, until the end.
func TestReplayFollowsARunningAttempt(t *testing.T) {
	s := New(Limits{MaxAnswer: 1 << 10, MaxTotal: 1 << 20})
	e, _, _ := s.Begin("k", fp("a"), time.Minute)
	e.Frame([]byte("f0"))
	got := make(chan string, 10)
	done := make(chan error, 1)
	r, _, _ := s.Begin("k", fp("a"), time.Minute)
	go func() { done <- r.Replay(t.Context(), func(b []byte) error { got <- string(b); return nil }) }()
	if f := <-got; f != "f0" {
		t.Fatalf("first frame %q", f)
	}
	waited := make(chan error, 1)
	go func() { waited <- r.Wait(t.Context()) }()
	e.Frame([]byte("f1"))
	if f := <-got; f != "f1" {
		t.Fatalf("second frame %q", f)
	}
	select {
	case <-waited:
		t.Fatal("Wait returned before the end")
	case <-done:
		t.Fatal("Replay returned before the end")
	default:
	}
	s.Finish(e, true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}

	// A follower whose own request ends stops.
	e2, _, _ := s.Begin("k2", fp("a"), time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := e2.Replay(ctx, func([]byte) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Replay with an ended context: %v", err)
	}
	if err := e2.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context: %v", err)
	}
}

// Answers expire their TTL after they end or were last replayed; the
// oldest go when the total is over its limit; a long answer is kept
// truncated.
func TestBounds(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New(Limits{MaxAnswer: 100, MaxTotal: 3 * (entryOverhead + 100 + 2)})
	s.now = func() time.Time { return now }
	add := func(key string, ttl time.Duration) *Entry {
		e, first, err := s.Begin(key, fp("x"), ttl)
		if err != nil || !first {
			t.Fatalf("Begin %s: %v %v", key, first, err)
		}
		e.Frame([]byte(strings.Repeat("x", 100)))
		s.Finish(e, true)
		return e
	}

	add("k1", time.Minute)
	now = now.Add(50 * time.Second)
	if _, first, _ := s.Begin("k1", fp("x"), time.Minute); first {
		t.Fatal("forgotten before its TTL")
	}
	now = now.Add(50 * time.Second) // 100 s after its end, 50 s after its replay
	if _, first, _ := s.Begin("k1", fp("x"), time.Minute); first {
		t.Fatal("a replay did not keep it its TTL longer")
	}
	now = now.Add(2 * time.Minute)
	if _, first, _ := s.Begin("k1", fp("x"), time.Minute); !first {
		t.Fatal("kept past its TTL")
	}

	// Three fit; a fourth pushes out the least recently used.
	s = New(Limits{MaxAnswer: 100, MaxTotal: 3 * (entryOverhead + 100 + 2)})
	s.now = func() time.Time { return now }
	for i := range 3 {
		add(fmt.Sprintf("a%d", i), time.Hour)
	}
	if _, _, err := s.Begin("a0", fp("x"), time.Hour); err != nil { // a0 is now the most recent
		t.Fatal(err)
	}
	add("a3", time.Hour)
	if n, total := s.Len(); n != 3 || total > 3*(entryOverhead+100+2) {
		t.Fatalf("%d entries, %d bytes", n, total)
	}
	if _, first, _ := s.Begin("a1", fp("x"), time.Hour); !first {
		t.Fatal("the least recently used answer stayed")
	}

	// An answer over MaxAnswer keeps its status, not its frames.
	e, _, _ := s.Begin("long", fp("x"), time.Hour)
	e.Respond(200, nil)
	e.Frame([]byte(strings.Repeat("y", 60)))
	e.Frame([]byte(strings.Repeat("y", 60)))
	s.Finish(e, true)
	r, _, _ := s.Begin("long", fp("x"), time.Hour)
	if err := r.Replay(t.Context(), func([]byte) error { return nil }); !errors.Is(err, ErrTruncated) {
		t.Fatalf("replay of a long answer: %v", err)
	}
}
