package eventlog

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/state/health"
)

// followBlock is how long the hub's XREAD blocks before it starts again
// (new keys interrupt it at once with CLIENT UNBLOCK); an XREAD unanswered
// followSlack after that is a frozen Redis, and the followers' link goes
// down.
const (
	followBlock = time.Second
	followSlack = time.Second
)

// followRecheck is how long a follower waits before it checks again that
// its run still exists (a run whose keys expired while it waited).
const followRecheck = 10 * time.Second

// Follow implements Log. Store errors are retried (with backoff, the
// hub's link reporting the gap) until ctx ends: a follower survives a
// Redis restart or freeze.
func (l *Redis) Follow(ctx context.Context, runID string, after uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		key := l.logKey(runID)
		pos := after
		start := "0-" + strconv.FormatUint(pos+1, 10)
		checked := time.Time{}
		pause := 50 * time.Millisecond
		f := &follower{}
		for {
			if l.isClosed() {
				yield(Entry{}, ErrClosed)
				return
			}
			if time.Since(checked) > followRecheck {
				n, err := l.rdb.Exists(ctx, l.metaKey(runID)).Result()
				if err == nil && n == 0 {
					yield(Entry{}, ErrNotFound)
					return
				}
				if err == nil {
					checked = time.Now()
				}
			}
			msgs, err := l.rdb.XRangeN(ctx, key, start, "+", 64).Result()
			if err != nil {
				if ctx.Err() != nil {
					yield(Entry{}, ctx.Err())
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
				pause = min(2*pause, time.Second)
				continue
			}
			pause = 50 * time.Millisecond
			ended := false
			f.reset()
			for _, m := range msgs {
				start = "(" + m.ID
				if m.ID == "1-0" {
					ended = true
					break
				}
				d, _ := m.Values["d"].(string)
				_ = eachFrame([]byte(d), func(id uint64, data []byte) bool {
					if id > pos {
						f.add(id, data)
						pos = id
					}
					return true
				})
			}
			f.finish()
			for _, e := range f.entries {
				if !yield(e, nil) {
					return
				}
			}
			if ended {
				return
			}
			if len(msgs) == 64 {
				continue
			}
			top := "0-" + strconv.FormatUint(pos, 10)
			if len(msgs) > 0 {
				top = msgs[len(msgs)-1].ID
			}
			if err := l.hub.wait(ctx, key, top); err != nil {
				yield(Entry{}, err)
				return
			}
		}
	}
}

// hub serves the waits of a replica's followers with one connection
// blocked in XREAD on all their streams.
type hub struct {
	l    *Redis
	link *health.Link

	mu      sync.Mutex
	waiters map[string][]chan struct{} // by stream key
	pos     map[string]string          // the id each stream is read after
	client  int64                      // the blocked connection's CLIENT ID
	changed chan struct{}
}

func newHub(l *Redis) *hub {
	h := &hub{l: l, link: health.NewLink("event log followers"), waiters: map[string][]chan struct{}{},
		pos: map[string]string{}, changed: make(chan struct{}, 1)}
	return h
}

// wait returns when the stream key may have an entry after id, at the
// latest after followRecheck, or with ctx's error.
func (h *hub) wait(ctx context.Context, key, id string) error {
	ch := make(chan struct{})
	h.mu.Lock()
	cur, known := h.pos[key]
	switch {
	case known && streamLess(id, cur):
		// The hub has seen entries this follower has not read yet.
		h.mu.Unlock()
		return nil
	case !known || streamLess(cur, id):
		h.pos[key] = id
		select {
		case h.changed <- struct{}{}:
		default:
		}
		if client := h.client; client != 0 {
			h.waiters[key] = append(h.waiters[key], ch)
			h.mu.Unlock()
			// The blocked XREAD starts again with this stream.
			uctx, cancel := context.WithTimeout(ctx, time.Second)
			h.l.rdb.ClientUnblock(uctx, client)
			cancel()
			return h.await(ctx, key, ch)
		}
	}
	h.waiters[key] = append(h.waiters[key], ch)
	h.mu.Unlock()
	return h.await(ctx, key, ch)
}

func (h *hub) await(ctx context.Context, key string, ch chan struct{}) error {
	t := time.NewTimer(followRecheck)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-t.C:
		h.drop(key, ch)
		return nil
	case <-ctx.Done():
		h.drop(key, ch)
		return ctx.Err()
	}
}

// drop removes a waiter that stopped waiting.
func (h *hub) drop(key string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ws := h.waiters[key]
	for i, c := range ws {
		if c == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(h.waiters, key)
		delete(h.pos, key)
	} else {
		h.waiters[key] = ws
	}
}

// wakeLocked wakes the followers of key.
func (h *hub) wakeLocked(key string) {
	for _, ch := range h.waiters[key] {
		close(ch)
	}
	delete(h.waiters, key)
	delete(h.pos, key)
}

// loop blocks in XREAD on the streams followers wait on, and wakes them
// when their stream grows, until the log closes. A connection that fails
// is replaced; every waiter is woken then, to read again.
func (h *hub) loop() {
	var conn *redis.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	pause := 50 * time.Millisecond
	for {
		select {
		case <-h.l.stop:
			return
		default:
		}
		h.mu.Lock()
		keys := make([]string, 0, 2*len(h.pos))
		ids := make([]string, 0, len(h.pos))
		for k, id := range h.pos {
			keys = append(keys, k)
			ids = append(ids, id)
		}
		h.mu.Unlock()
		if len(keys) == 0 {
			select {
			case <-h.l.stop:
				return
			case <-h.changed:
			}
			continue
		}
		if conn == nil {
			conn = h.l.rdb.Conn()
			id, err := conn.ClientID(context.Background()).Result()
			if err != nil {
				h.fail(&conn, err, &pause)
				continue
			}
			h.mu.Lock()
			h.client = id
			h.mu.Unlock()
		}
		rctx, cancel := context.WithTimeout(context.Background(), followBlock+followSlack)
		res, err := conn.XRead(rctx, &redis.XReadArgs{Streams: append(keys, ids...), Count: 1, Block: followBlock}).Result()
		cancel()
		switch {
		case errors.Is(err, redis.Nil):
			// Timed out, or unblocked: start again with the current set.
			h.link.Up()
			continue
		case err != nil:
			h.fail(&conn, err, &pause)
			continue
		}
		h.link.Up()
		pause = 50 * time.Millisecond
		h.mu.Lock()
		for _, s := range res {
			h.wakeLocked(s.Stream)
		}
		h.mu.Unlock()
	}
}

// fail drops the connection, wakes every waiter (they read again and wait
// again) and pauses before the next attempt.
func (h *hub) fail(conn **redis.Conn, err error, pause *time.Duration) {
	h.link.Down(err)
	(*conn).Close()
	*conn = nil
	h.mu.Lock()
	h.client = 0
	for k := range h.waiters {
		h.wakeLocked(k)
	}
	h.mu.Unlock()
	select {
	case <-h.l.stop:
	case <-time.After(*pause):
	}
	*pause = min(2**pause, time.Second)
}

// streamLess reports whether stream id a is before b.
func streamLess(a, b string) bool {
	am, as, _ := parseStreamID(a)
	bm, bs, _ := parseStreamID(b)
	return am < bm || (am == bm && as < bs)
}
