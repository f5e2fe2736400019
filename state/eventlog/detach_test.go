package eventlog

import (
	"testing"
	"time"
)

// A run that pauses detaches its writer: its pending events are stored
// before Detach returns (though the flusher would wait a second), nothing
// of the run stays in the process, and whoever goes on with it at once,
// in this process or on another replica, continues the ids after them:
// 1..N once each, in order.
func TestDetachHandsTheLogOver(t *testing.T) {
	o := testOptions()
	o.FlushInterval = time.Second
	for name, open := range fixtures(o, false) {
		t.Run(name, func(t *testing.T) {
			f := open(t)
			ctx := t.Context()
			a := f.open(t)
			w, err := a.Start(ctx, Meta{RunID: "r1", Owner: "a"})
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 5; i++ {
				w.Append(ev(i))
			}
			if err := w.SetStatus(ctx, StatusWaiting); err != nil {
				t.Fatal(err)
			}
			if err := w.Detach(ctx); err != nil {
				t.Fatal(err)
			}
			if id := w.Append(ev(99)); id != 0 {
				t.Fatalf("an append after Detach got id %d", id)
			}
			b := a
			if bl, ok := a.(*Bolt); ok {
				bl.mu.Lock()
				n := len(bl.live)
				bl.mu.Unlock()
				if n != 0 {
					t.Fatalf("the process keeps %d writers after Detach", n)
				}
			} else {
				b = f.open(t) // another replica
			}
			if m, err := b.Meta(ctx, "r1"); err != nil || m.Status != StatusWaiting {
				t.Fatalf("meta %+v %v", m, err)
			}
			w2, err := b.Continue(ctx, "r1", "", "b")
			if err != nil {
				t.Fatal(err)
			}
			for i := 6; i <= 8; i++ {
				if id := w2.Append(ev(i)); id != uint64(i) {
					t.Fatalf("event %d got id %d", i, id)
				}
			}
			if err := w2.End(ctx, "success"); err != nil {
				t.Fatal(err)
			}
			got, err := collect(t, b, "r1", 0, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, got, 1, 8)
		})
	}
}
