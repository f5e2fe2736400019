package eventlog

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A typical streamed chunk, as the server encodes it.
var chunk = []byte(`{"type":"TEXT_MESSAGE_CONTENT","timestamp":1764000000000,"messageId":"run-3f2a9c-msg-1","delta":" the"}`)

// BenchmarkAppend is the hot path: what a run's sink pays per event (a
// copy into the pending batch; the flusher runs beside it).
func BenchmarkAppend(b *testing.B) {
	for name, open := range fixtures(Options{}, false) {
		b.Run(name, func(b *testing.B) {
			l := open(b).open(b)
			w, err := l.Start(context.Background(), Meta{RunID: "bench", Owner: "a"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w.Append(chunk)
			}
			b.StopTimer()
			w.End(context.Background(), "success")
		})
	}
}

// BenchmarkRunLog is a whole run's log as the server would write it: start,
// 46 events (40 chunks and the run's other events), end; 16 runs at a
// time, the flusher's work (and for Redis its round trips) included, until
// the last run is stored. It reports the Redis commands per run (INFO
// commandstats).
func BenchmarkRunLog(b *testing.B) {
	for name, open := range fixtures(Options{}, false) {
		b.Run(name, func(b *testing.B) {
			f := open(b)
			l := f.open(b)
			ctx := context.Background()
			var before int64
			if f.srv != nil {
				before = redisCalls(b, f.srv.URL)
			}
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := "run-" + strconv.FormatInt(seq.Add(1), 10)
					w, err := l.Start(ctx, Meta{RunID: id, Owner: "a", ChainID: "chat"})
					if err != nil {
						b.Error(err)
						return
					}
					for range 46 {
						w.Append(chunk)
					}
					w.End(ctx, "success")
				}
			})
			l.Close() // flushes what is left
			b.StopTimer()
			if f.srv != nil {
				b.ReportMetric(float64(redisCalls(b, f.srv.URL)-before)/float64(b.N), "redis-cmds/run")
			}
		})
	}
}

// BenchmarkFollowLatency is how long a follower on another replica waits
// for an event: from Append to the follower's yield, with the default
// FlushInterval (100 ms) and a short one (10 ms).
func BenchmarkFollowLatency(b *testing.B) {
	for _, flush := range []time.Duration{100 * time.Millisecond, 10 * time.Millisecond} {
		for name, open := range fixtures(Options{FlushInterval: flush}, false) {
			b.Run(name+"/flush="+flush.String(), func(b *testing.B) {
				f := open(b)
				l, other := f.open(b), Log(nil)
				if f.srv != nil {
					other = f.open(b) // another replica
				} else {
					other = l // one process
				}
				ctx := context.Background()
				w, _ := l.Start(ctx, Meta{RunID: "lat", Owner: "a"})
				got := make(chan time.Time, 1)
				go func() {
					for _, err := range other.Follow(ctx, "lat", 0) {
						if err != nil {
							return
						}
						got <- time.Now()
					}
				}()
				var total time.Duration
				b.ResetTimer()
				for range b.N {
					sent := time.Now()
					w.Append(chunk)
					total += (<-got).Sub(sent)
				}
				b.StopTimer()
				b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/event")
				w.End(ctx, "success")
			})
		}
	}
}

func redisCalls(b *testing.B, url string) int64 {
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "cmdstat_") || strings.HasPrefix(line, "cmdstat_info") {
			continue
		}
		if _, rest, ok := strings.Cut(line, "calls="); ok {
			v, _, _ := strings.Cut(rest, ",")
			c, _ := strconv.ParseInt(v, 10, 64)
			n += c
		}
	}
	return n
}
