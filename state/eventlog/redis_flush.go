package eventlog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// flushLoop writes the pending batches every FlushInterval after the
// first append that follows a flush, until Close (which flushes what is
// left).
func (l *Redis) flushLoop() {
	for {
		select {
		case <-l.stop:
			l.flush()
			return
		case <-l.signal:
		}
		t := time.NewTimer(l.o.FlushInterval)
		select {
		case <-l.stop:
			t.Stop()
			l.flush()
			return
		case <-t.C:
		}
		l.flush()
	}
}

type redisJob struct {
	w      *redisWriter
	b      *batch
	end    string
	endAt  time.Time
	add    *redis.StringCmd
	cmds   []redis.Cmder
	expire bool
}

// flush sends every dirty writer's batch (and end) in one pipeline.
func (l *Redis) flush() {
	l.mu.Lock()
	ws := l.dirty
	l.dirty = nil
	l.mu.Unlock()
	if len(ws) == 0 {
		return
	}
	seen := make(map[*redisWriter]bool, len(ws))
	jobs := make([]redisJob, 0, len(ws))
	for _, w := range ws {
		if seen[w] {
			continue
		}
		seen[w] = true
		w.flushMu.Lock()
		j := redisJob{w: w, b: w.take()}
		w.mu.Lock()
		if w.ended {
			j.end, j.endAt = w.status, w.endAt
		}
		w.mu.Unlock()
		jobs = append(jobs, j)
	}
	// A frozen Redis must not hold the flusher for long: what fails goes
	// back to its writer and is sent again.
	ctx, cancel := context.WithTimeout(context.Background(), min(max(500*time.Millisecond, 10*l.o.FlushInterval), 2*time.Second))
	defer cancel()
	now := time.Now()
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range jobs {
			l.queue(ctx, p, &jobs[i], now)
		}
		return nil
	})
	if err != nil && !allStored(jobs) {
		l.link.Down(err)
	} else {
		l.link.Up()
	}
	l.settle(jobs, now)
}

// queue adds one job's commands to the pipeline.
func (l *Redis) queue(ctx context.Context, p redis.Pipeliner, j *redisJob, now time.Time) {
	w := j.w
	if j.b != nil {
		args := &redis.XAddArgs{Stream: w.logKey, ID: "0-" + strconv.FormatUint(j.b.last, 10),
			Values: []any{"n", j.b.n, "d", j.b.buf}}
		if w.minID > 0 {
			args.MinID = "0-" + strconv.FormatUint(w.minID, 10)
		}
		j.add = p.XAdd(ctx, args)
		if now.After(w.expires) && j.end == "" {
			j.expire = true
			j.cmds = append(j.cmds, p.PExpire(ctx, w.logKey, l.o.MaxAge), p.PExpire(ctx, w.metaKey, l.o.MaxAge))
		}
	}
	if j.end != "" {
		j.cmds = append(j.cmds,
			p.XAdd(ctx, &redis.XAddArgs{Stream: w.logKey, ID: "1-0", Values: []any{"end", j.end}}),
			p.HSet(ctx, w.metaKey, "status", j.end, "ended", j.endAt.UnixMilli()),
			p.PExpire(ctx, w.logKey, l.o.Retention), p.PExpire(ctx, w.metaKey, l.o.Retention),
			p.ZRem(ctx, l.liveKey(), w.runID))
	}
}

// stored reports whether an XADD stored its entry: an id at or below the
// stream's top means an earlier attempt stored it (or a later batch of the
// run went first, which flushMu rules out).
func stored(c *redis.StringCmd) bool {
	if c == nil {
		return true
	}
	err := c.Err()
	return err == nil || strings.Contains(err.Error(), "equal or smaller")
}

func allStored(jobs []redisJob) bool {
	for i := range jobs {
		if !jobDone(&jobs[i]) {
			return false
		}
	}
	return true
}

func jobDone(j *redisJob) bool {
	if !stored(j.add) {
		return false
	}
	for _, c := range j.cmds {
		if c.Err() != nil && !errors.Is(c.Err(), redis.Nil) && !strings.Contains(c.Err().Error(), "equal or smaller") {
			return false
		}
	}
	return true
}

// settle ends a flush: a stored batch counts toward the bounds (the
// oldest batches over them are trimmed by the next XADD), a failed one
// goes back to its writer.
func (l *Redis) settle(jobs []redisJob, now time.Time) {
	var again []*redisWriter
	for i := range jobs {
		j := &jobs[i]
		w := j.w
		if !stored(j.add) {
			if w.giveBack(j.b, j.add.Err()) {
				again = append(again, w)
			}
		} else if j.b != nil {
			w.spans = append(w.spans, span{last: j.b.last, events: j.b.n, len: len(j.b.buf)})
			w.events += j.b.n
			w.size += len(j.b.buf)
			for len(w.spans) > 1 && (w.events > l.o.MaxEvents || w.size > l.o.MaxBytes) {
				s := w.spans[0]
				w.spans = w.spans[1:]
				w.events -= s.events
				w.size -= s.len
				w.minID = s.last + 1
			}
			if j.expire {
				w.expires = now.Add(l.o.MaxAge / 2)
			}
			j.b.reset()
		}
		if j.end != "" && !jobDone(j) {
			// The end goes again with the next flush.
			w.mu.Lock()
			again = append(again, w)
			w.dirty = true
			w.mu.Unlock()
		}
		w.flushMu.Unlock()
	}
	if len(again) > 0 {
		l.mu.Lock()
		l.dirty = append(l.dirty, again...)
		l.mu.Unlock()
		select {
		case l.signal <- struct{}{}:
		default:
		}
	}
}
