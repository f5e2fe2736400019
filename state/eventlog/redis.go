package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/state/health"
)

// Redis is the event log of a fleet. Layout, under its prefix (the run id
// in braces: a run's keys share one Redis Cluster slot):
//
//	PREFIX run:{ID}:log  stream: one entry per flushed batch, id 0-LAST
//	                     (LAST: the batch's last event id), fields n
//	                     (events) and d (the framed events); the end is
//	                     the entry 1-0, field end (the outcome)
//	PREFIX run:{ID}      hash: owner, chain, thread, user, source, status,
//	                     started and ended (Unix ms)
//	PREFIX runs          sorted set of run ids by start (ms), for lists
//	PREFIX runs:live     the same, of the runs not ended: List{Live} (a
//	                     replica's janitor, every few seconds) reads these
//	                     only, not every run kept
//
// Both run keys expire MaxAge after the run's last flush while it runs,
// Retention after it ended. The flusher sends one pipeline per
// FlushInterval for every run with something pending: an XADD per run
// (trimmed by MINID to the bounds), plus the Meta when it changed.
type Redis struct {
	rdb    *redis.Client
	prefix string
	o      Options
	hub    *hub

	mu     sync.Mutex
	dirty  []*redisWriter
	closed bool
	signal chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	link   *health.Link
}

// NewRedis returns the event log on rdb (which must honour context
// deadlines, as redisconn.Open sets it). Close stops its goroutines and
// leaves rdb open.
func NewRedis(rdb *redis.Client, prefix string, o Options) *Redis {
	l := &Redis{rdb: rdb, prefix: prefix, o: o.fill(), signal: make(chan struct{}, 1), stop: make(chan struct{}),
		link: health.NewLink("event log writes")}
	l.link.Up()
	l.hub = newHub(l)
	l.wg.Go(l.flushLoop)
	l.wg.Go(l.hub.loop)
	return l
}

// Probes are the log's links: its writes and its followers' connection.
func (l *Redis) Probes() []health.Probe { return []health.Probe{l.link, l.hub.link} }

func (l *Redis) metaKey(runID string) string { return l.prefix + "run:{" + runID + "}" }
func (l *Redis) logKey(runID string) string  { return l.prefix + "run:{" + runID + "}:log" }
func (l *Redis) indexKey() string            { return l.prefix + "runs" }
func (l *Redis) liveKey() string             { return l.prefix + "runs:live" }

// startScript: KEYS meta, index, live index; ARGV owner, chain, thread,
// user, source, started (ms), max age (ms), run id.
var startScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'chain', ARGV[2], 'thread', ARGV[3], 'user', ARGV[4],
  'source', ARGV[5], 'status', 'running', 'started', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[8])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[8])
return 1
`)

// continueScript: KEYS meta, log; ARGV from ("" for any), owner, max age
// (ms). It answers {1, last entry id}, {-1} (none), {-2} (ended) or {-3,
// owner}.
var continueScript = redis.NewScript(`
local m = redis.call('HMGET', KEYS[1], 'owner', 'ended')
if not m[1] then return {-1} end
if m[2] then return {-2} end
if ARGV[1] ~= '' and m[1] ~= ARGV[1] then return {-3, m[1]} end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'status', 'running')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then return {1, last[1][1]} end
return {1, '0-0'}
`)

// Start implements Log: one round trip (the run id's uniqueness is
// checked across the fleet).
func (l *Redis) Start(ctx context.Context, m Meta) (Writer, error) {
	if m.RunID == "" {
		return nil, errors.New("event log: a run needs an id")
	}
	if l.isClosed() {
		return nil, ErrClosed
	}
	if m.StartedAt.IsZero() {
		m.StartedAt = time.Now().UTC()
	}
	m.Status, m.EndedAt = StatusRunning, time.Time{}
	n, err := startScript.Run(ctx, l.rdb, []string{l.metaKey(m.RunID), l.indexKey(), l.liveKey()}, m.Owner, m.ChainID, m.ThreadID,
		m.UserID, m.Source, m.StartedAt.UnixMilli(), l.o.MaxAge.Milliseconds(), m.RunID).Int64()
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	if n == 0 {
		return nil, ErrExists
	}
	return l.newWriter(m.RunID, 1), nil
}

// Continue implements Log.
func (l *Redis) Continue(ctx context.Context, runID, from, owner string) (Writer, error) {
	if l.isClosed() {
		return nil, ErrClosed
	}
	res, err := continueScript.Run(ctx, l.rdb, []string{l.metaKey(runID), l.logKey(runID)}, from, owner,
		l.o.MaxAge.Milliseconds()).Slice()
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	code, _ := res[0].(int64)
	switch code {
	case -1:
		return nil, ErrNotFound
	case -2:
		return nil, ErrEnded
	case -3:
		return nil, fmt.Errorf("%w: %v", ErrOwned, res[1])
	}
	last, _ := res[1].(string)
	_, seq, ok := parseStreamID(last)
	if !ok {
		return nil, fmt.Errorf("event log: run %s: bad stream id %q", runID, last)
	}
	return l.newWriter(runID, seq+1), nil
}

func (l *Redis) newWriter(runID string, next uint64) *redisWriter {
	w := &redisWriter{l: l, logKey: l.logKey(runID), metaKey: l.metaKey(runID)}
	w.runID, w.next, w.maxPend = runID, next, l.o.MaxBytes
	return w
}

func (l *Redis) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// redisWriter is one run's writer.
type redisWriter struct {
	core
	l               *Redis
	logKey, metaKey string

	// Guarded by mu: the Meta fields to write with the next flush.
	status string
	endAt  time.Time

	// Guarded by flushMu: what the stream holds, for the bounds, and when
	// its expiry was last pushed.
	spans   []span
	events  int
	size    int
	minID   uint64
	expires time.Time
}

// span is one stored batch.
type span struct {
	last        uint64
	events, len int
}

// Append implements Writer.
func (w *redisWriter) Append(data []byte) uint64 { return w.append(data, w.mark) }

func (w *redisWriter) mark() { w.l.markDirty(w) }

// SetStatus implements Writer.
func (w *redisWriter) SetStatus(ctx context.Context, status string) error {
	w.mu.Lock()
	closed := w.closedLocked()
	w.mu.Unlock()
	if closed {
		return nil
	}
	if err := w.l.rdb.HSet(ctx, w.metaKey, "status", status).Err(); err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	return nil
}

// End implements Writer: the end is written with the next flush.
func (w *redisWriter) End(_ context.Context, status string) error {
	w.mu.Lock()
	if w.closedLocked() {
		w.mu.Unlock()
		return nil
	}
	w.ended, w.status, w.endAt = true, status, time.Now().UTC()
	first := !w.dirty
	w.dirty = true
	w.mu.Unlock()
	if first {
		w.mark()
	}
	return nil
}

// Detach implements Writer: one pipeline, now, with what is pending.
func (w *redisWriter) Detach(ctx context.Context) error {
	if !w.detach() {
		return nil
	}
	// After the batch the flusher may be writing, if it is.
	w.flushMu.Lock()
	j := redisJob{w: w, b: w.take()}
	if j.b == nil {
		w.flushMu.Unlock()
		return nil
	}
	now := time.Now()
	_, err := w.l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		w.l.queue(ctx, p, &j, now)
		return nil
	})
	done := stored(j.add)
	if done {
		err = nil
	} else if j.add.Err() != nil {
		err = j.add.Err()
	}
	w.l.settle([]redisJob{j}, now)
	if err != nil {
		return fmt.Errorf("event log: run %s: its last events are not stored yet: %w", w.runID, err)
	}
	return nil
}

func (l *Redis) markDirty(w *redisWriter) {
	l.mu.Lock()
	l.dirty = append(l.dirty, w)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// Meta implements Log.
func (l *Redis) Meta(ctx context.Context, runID string) (Meta, error) {
	h, err := l.rdb.HGetAll(ctx, l.metaKey(runID)).Result()
	if err != nil {
		return Meta{}, fmt.Errorf("event log: %w", err)
	}
	if len(h) == 0 {
		return Meta{}, ErrNotFound
	}
	return metaOf(runID, h), nil
}

func metaOf(runID string, h map[string]string) Meta {
	m := Meta{RunID: runID, Owner: h["owner"], ChainID: h["chain"], ThreadID: h["thread"], UserID: h["user"],
		Source: h["source"], Status: h["status"]}
	if ms, err := strconv.ParseInt(h["started"], 10, 64); err == nil {
		m.StartedAt = time.UnixMilli(ms).UTC()
	}
	if ms, err := strconv.ParseInt(h["ended"], 10, 64); err == nil {
		m.EndedAt = time.UnixMilli(ms).UTC()
	}
	return m
}

// List implements Log. Runs whose keys expired leave the index on the
// way; with f.Live, only the index of the runs not ended is read (ended
// ones leave it on the way too).
func (l *Redis) List(ctx context.Context, f Filter) ([]Meta, error) {
	index := l.indexKey()
	if f.Live {
		index = l.liveKey()
	}
	ids, err := l.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: index, Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, l.metaKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("event log: %w", err)
	}
	var out []Meta
	var gone, ended []any
	for i, c := range cmds {
		if len(c.Val()) == 0 {
			gone = append(gone, ids[i])
			continue
		}
		m := metaOf(ids[i], c.Val())
		if f.Live && m.Ended() {
			ended = append(ended, ids[i])
		}
		if f.match(&m) {
			out = append(out, m)
		}
	}
	if len(gone) > 0 {
		l.rdb.ZRem(ctx, l.indexKey(), gone...)
		l.rdb.ZRem(ctx, l.liveKey(), gone...)
	}
	if len(ended) > 0 {
		l.rdb.ZRem(ctx, l.liveKey(), ended...)
	}
	return sortMetas(out, f.Limit), nil
}

// Close implements Log.
func (l *Redis) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	close(l.stop)
	l.mu.Unlock()
	l.wg.Wait()
	l.hub.mu.Lock()
	for k := range l.hub.waiters {
		l.hub.wakeLocked(k)
	}
	l.hub.mu.Unlock()
	return nil
}

// parseStreamID reads a stream entry id "MS-SEQ".
func parseStreamID(s string) (ms, seq uint64, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	ms, err1 := strconv.ParseUint(a, 10, 64)
	seq, err2 := strconv.ParseUint(b, 10, 64)
	return ms, seq, err1 == nil && err2 == nil
}
