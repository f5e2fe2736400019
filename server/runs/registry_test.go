package runs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// Wait returns the moment the last run ends, without polling: in a
// synctest bubble no fake time passes between the End and Wait's return
// (a 20 ms ticker, as it was, makes it return 20 ms later), and while runs
// are in progress Wait stays blocked until its context ends.
func TestWaitIsEventDriven(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := NewRegistry()
		if !g.Wait(t.Context()) {
			t.Fatal("Wait on an empty registry did not return true")
		}
		a, _, err := g.Start(t.Context(), Info{RunID: "a"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := g.Start(t.Context(), Info{RunID: "b"}, events.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.Start(t.Context(), Info{RunID: "b"}, nil); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("a duplicate run id: %v", err)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		if g.Wait(ctx) {
			t.Fatal("Wait returned true with runs in progress")
		}
		cancel()

		var returned time.Time
		done := make(chan bool)
		go func() {
			ok := g.Wait(t.Context())
			returned = time.Now()
			done <- ok
		}()
		synctest.Wait()
		g.End(a)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Wait returned while a run was still in progress")
		default:
		}
		ended := time.Now()
		g.End(b)
		if !<-done {
			t.Fatal("Wait reported runs still in progress")
		}
		if d := returned.Sub(ended); d != 0 {
			t.Fatalf("Wait returned %v after the last run ended, want at once", d)
		}

		// The registry can fill and empty again.
		c, _, err := g.Start(t.Context(), Info{RunID: "c"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.Active() != 1 {
			t.Fatalf("active %d", g.Active())
		}
		go func() { done <- g.Wait(t.Context()) }()
		synctest.Wait()
		g.End(c)
		if !<-done {
			t.Fatal("Wait after a second start")
		}
	})
}
