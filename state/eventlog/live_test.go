package eventlog

import (
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// liveIndexed counts the runs a log's live index holds.
func liveIndexed(t *testing.T, l Log) int {
	t.Helper()
	switch l := l.(type) {
	case *Bolt:
		n := 0
		_ = l.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bucketLive).Stats().KeyN; return nil })
		return n
	case *Redis:
		n, err := l.rdb.ZCard(t.Context(), l.liveKey()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	t.Fatalf("%T", l)
	return 0
}

// List{Live} (a janitor's, every few seconds on every replica) reads an
// index of the runs not ended, not every run kept for its retention: a
// run leaves it when it ends.
func TestLiveIndex(t *testing.T) {
	o := testOptions()
	o.Retention = time.Hour
	for name, open := range fixtures(o, false) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			l := open(t).open(t)
			var ws []Writer
			for i := range 30 {
				w, err := l.Start(ctx, Meta{RunID: fmt.Sprintf("r%02d", i), Owner: "a"})
				if err != nil {
					t.Fatal(err)
				}
				w.Append(ev(i))
				ws = append(ws, w)
			}
			time.Sleep(5 * o.FlushInterval)
			if n := liveIndexed(t, l); n != 30 {
				t.Fatalf("%d runs indexed live, want 30", n)
			}
			for _, w := range ws[1:] {
				w.End(ctx, "success")
			}
			time.Sleep(5 * o.FlushInterval)
			if n := liveIndexed(t, l); n != 1 {
				t.Errorf("%d runs indexed live after 29 ended, want 1", n)
			}
			live, err := l.List(ctx, Filter{Live: true})
			if err != nil || len(live) != 1 || live[0].RunID != "r00" {
				t.Errorf("live: %+v %v", live, err)
			}
			if all, _ := l.List(ctx, Filter{}); len(all) != 30 {
				t.Errorf("all: %d runs", len(all))
			}
		})
	}
}
