package limits

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/metrics"
)

// clock is a test clock the test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newStore() (*Memory, *clock) {
	c := &clock{t: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}
	m := NewMemory()
	m.SetClock(c.now)
	return m, c
}

func TestTakeSlidingWindow(t *testing.T) {
	m, c := newStore()
	ctx := context.Background()
	steps := []struct {
		advance time.Duration
		used    int
		ok      bool
	}{
		{0, 1, true},
		{10 * time.Minute, 2, true},
		{10 * time.Minute, 3, true},
		{0, 3, false},                // full
		{39 * time.Minute, 3, false}, // 59 minutes after the first: still in the window
		{time.Minute, 3, true},       // the first left the window; this one takes its place
		{0, 3, false},
		{2 * time.Hour, 1, true}, // everything left
	}
	for i, s := range steps {
		c.t = c.t.Add(s.advance)
		used, ok, err := m.Take(ctx, "k", 3, time.Hour)
		if err != nil || used != s.used || ok != s.ok {
			t.Fatalf("step %d: used %d ok %v err %v, want %d %v", i, used, ok, err, s.used, s.ok)
		}
	}
	// Keys are independent.
	if used, ok, _ := m.Take(ctx, "other", 3, time.Hour); used != 1 || !ok {
		t.Fatalf("other key: %d %v", used, ok)
	}
}

func TestAddAndIdleExpiry(t *testing.T) {
	m, c := newStore()
	ctx := context.Background()
	for i, n := range []int64{100, 250} {
		total, err := m.Add(ctx, "s", n, time.Hour)
		if err != nil || total != []int64{100, 350}[i] {
			t.Fatalf("add %d: %d %v", i, total, err)
		}
		c.t = c.t.Add(50 * time.Minute) // active: each addition keeps it an hour more
	}
	if got, _ := m.Total(ctx, "s"); got != 350 {
		t.Fatalf("total %d", got)
	}
	c.t = c.t.Add(11 * time.Minute) // idle for over an hour
	if got, _ := m.Total(ctx, "s"); got != 0 {
		t.Fatalf("total after idling %d", got)
	}
	if total, _ := m.Add(ctx, "s", 5, time.Hour); total != 5 {
		t.Fatalf("a forgotten total restarts: %d", total)
	}
}

func TestSweep(t *testing.T) {
	m, c := newStore()
	ctx := context.Background()
	for i := range 100 {
		m.Add(ctx, fmt.Sprint("s", i), 1, time.Minute)
	}
	if m.Len() != 100 {
		t.Fatalf("len %d", m.Len())
	}
	c.t = c.t.Add(sweepInterval)
	m.Add(ctx, "fresh", 1, time.Minute)
	if m.Len() != 1 {
		t.Fatalf("expired counters kept: %d", m.Len())
	}
}

func TestHit(t *testing.T) {
	before := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(TokensPerRun))
	err := error(Hit(TokensPerRun, 1000, 1200, "the run used %d tokens (limits.%s)", 1200, TokensPerRun))
	var ex *Exceeded
	if !errors.Is(err, ErrExceeded) || !errors.As(err, &ex) || ex.Limit != TokensPerRun || ex.Max != 1000 || ex.Used != 1200 {
		t.Fatalf("%#v", err)
	}
	if err.Error() != "limit exceeded: the run used 1200 tokens (limits.tokensPerRun)" {
		t.Fatalf("message %q", err)
	}
	if got := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(TokensPerRun)); got != before+1 {
		t.Fatalf("counter %v -> %v", before, got)
	}
}
