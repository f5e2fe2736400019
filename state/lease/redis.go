package lease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the Leaser a fleet shares. Layout, under its prefix:
//
//	PREFIX NAME         the lease: "TOKEN OWNER", PX TTL
//	PREFIX lease:fence  the token counter (seeded from Redis's clock, in µs)
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
	owner  string

	mu     sync.Mutex
	held   map[*redisLease]struct{}
	closed bool
	// renewing: the renewal goroutine runs (from the first Acquire until
	// Close).
	renewing bool
	stop     chan struct{}
	// zombies are leases lost to failed renewals whose keys may still hold
	// their value: the next round deletes them, so that a thread is free
	// as soon as Redis answers again rather than when the key expires.
	zombies []*redisLease
	wg      sync.WaitGroup
}

// acquireScript: KEYS lease, fence counter; ARGV owner, ttl (ms). It
// answers the token, or 0 when the lease is held.
var acquireScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local t = redis.call('TIME')
  redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
end
local f = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], string.format('%d', f) .. ' ' .. ARGV[1], 'PX', ARGV[2])
return f
`)

// renewSrc and releaseScript touch a lease only while it holds the
// holder's value.
const renewSrc = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`

const releaseSrc = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

var releaseScript = redis.NewScript(releaseSrc)

// NewRedis returns a Leaser on rdb whose lease keys are prefix+name. It
// does not own rdb: Close leaves it open. rdb must honour context
// deadlines (ContextTimeoutEnabled, as redisconn.Open sets it): a renewal
// stuck on a frozen Redis must fail by the holder's deadline, not the
// socket's.
func NewRedis(rdb redis.UniversalClient, prefix string, o Options) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, ttl: o.ttl(), owner: o.Owner, held: map[*redisLease]struct{}{},
		stop: make(chan struct{})}
}

// Key is the Redis key of lease name (a caller's fenced script checks it).
func (r *Redis) Key(name string) string { return r.prefix + name }

// TTL is the leases' time to live.
func (r *Redis) TTL() time.Duration { return r.ttl }

// Acquire implements Leaser.
func (r *Redis) Acquire(ctx context.Context, name string) (Lease, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	sent := time.Now()
	key := r.Key(name)
	tok, err := acquireScript.Run(ctx, r.rdb, []string{key, r.prefix + "lease:fence"}, r.owner, r.ttl.Milliseconds()).Int64()
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", name, err)
	}
	if tok == 0 {
		return nil, ErrHeld
	}
	x := &redisLease{r: r, name: name, key: key, token: uint64(tok), lost: make(chan struct{}),
		value: strconv.FormatInt(tok, 10) + " " + r.owner, validUntil: r.deadline(sent)}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		x.drop()
		return nil, ErrClosed
	}
	r.held[x] = struct{}{}
	if !r.renewing {
		r.renewing = true
		r.wg.Go(r.renewLoop)
	}
	r.mu.Unlock()
	return x, nil
}

// deadline is when a holder that sent its last successful renewal at sent
// must consider its lease lost: 3/4 of the TTL, so that it stops before
// Redis (whose clock starts when it receives the command) lets another
// holder in.
func (r *Redis) deadline(sent time.Time) time.Time { return sent.Add(r.ttl * 3 / 4) }

// renewLoop renews every held lease every TTL/3 in one pipeline, retrying
// every TTL/12 while renewals fail, and ends the leases whose renewals
// failed past their deadline. It ends with Close.
func (r *Redis) renewLoop() {
	every, retry := r.ttl/3, r.ttl/12
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if r.renewAll() {
			t.Reset(every)
		} else {
			t.Reset(retry)
		}
	}
}

// renewAll renews the held leases; it reports whether Redis answered.
func (r *Redis) renewAll() bool {
	r.mu.Lock()
	all := make([]*redisLease, 0, len(r.held))
	for x := range r.held {
		all = append(all, x)
	}
	zombies := r.zombies
	r.zombies = nil
	r.mu.Unlock()
	if len(all) == 0 && len(zombies) == 0 {
		return true
	}
	sent := time.Now()
	// Wait at most until the first deadline: a renewal that answers later
	// is too late anyway.
	until := sent.Add(r.ttl / 3)
	for _, x := range all {
		if v := x.deadline(); v.Before(until) {
			until = v
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	cmds := make([]*redis.Cmd, len(all))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, x := range all {
			cmds[i] = p.Eval(ctx, renewSrc, []string{x.key}, x.value, r.ttl.Milliseconds())
		}
		for _, x := range zombies {
			p.Eval(ctx, releaseSrc, []string{x.key}, x.value)
		}
		return nil
	})
	if err != nil {
		// Not deleted this time: try again next round (each ends with its
		// key's TTL anyway).
		r.mu.Lock()
		r.zombies = append(r.zombies, zombies...)
		r.mu.Unlock()
	}
	now := time.Now()
	ok := true
	for i, x := range all {
		n, cerr := cmds[i].Int64()
		switch {
		case err == nil && cerr == nil && n == 1:
			x.renewed(r.deadline(sent))
		case err == nil && cerr == nil:
			x.end(errors.New("its key expired or another holder took it"))
		default:
			ok = false
			if !now.Before(x.deadline()) && x.end(fmt.Errorf("renewals failed for %s: %v", r.ttl*3/4, errors.Join(err, cerr))) {
				r.mu.Lock()
				if !r.closed {
					r.zombies = append(r.zombies, x)
				}
				r.mu.Unlock()
			}
		}
	}
	return ok
}

// forget removes x from the renewed leases.
func (r *Redis) forget(x *redisLease) {
	r.mu.Lock()
	delete(r.held, x)
	r.mu.Unlock()
}

// Close implements Leaser.
func (r *Redis) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	all := r.held
	r.held = map[*redisLease]struct{}{}
	close(r.stop)
	r.mu.Unlock()
	r.wg.Wait()
	for x := range all {
		if x.end(ErrClosed) {
			x.drop()
		}
	}
	return nil
}

type redisLease struct {
	r     *Redis
	name  string
	key   string
	value string
	token uint64
	lost  chan struct{}

	mu         sync.Mutex
	validUntil time.Time
	err        error
	done       bool
}

func (x *redisLease) Name() string          { return x.name }
func (x *redisLease) Token() uint64         { return x.token }
func (x *redisLease) Lost() <-chan struct{} { return x.lost }

func (x *redisLease) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

func (x *redisLease) deadline() time.Time {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.validUntil
}

func (x *redisLease) renewed(until time.Time) {
	x.mu.Lock()
	if until.After(x.validUntil) {
		x.validUntil = until
	}
	x.mu.Unlock()
}

// end marks the lease ended (lost with cause, or released when cause is
// nil) once, and reports whether this call ended it.
func (x *redisLease) end(cause error) bool {
	x.mu.Lock()
	if x.done {
		x.mu.Unlock()
		return false
	}
	x.done = true
	if cause != nil {
		if !errors.Is(cause, ErrClosed) {
			cause = fmt.Errorf("%w: %w", ErrLost, cause)
		}
		x.err = fmt.Errorf("lease %s: %w", x.name, cause)
	}
	x.mu.Unlock()
	x.r.forget(x)
	if cause != nil {
		close(x.lost)
	}
	return true
}

// drop deletes the lease's key if it still holds this holder's value; a
// key that cannot be deleted ends with its TTL.
func (x *redisLease) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), x.r.ttl/3)
	defer cancel()
	_ = releaseScript.Run(ctx, x.r.rdb, []string{x.key}, x.value).Err()
}

// Release implements Lease.
func (x *redisLease) Release() {
	if x.end(nil) {
		x.drop()
	}
}

// Fence returns the key of lease l and the value it holds while l is
// held, for a caller's script that writes only while the lease is still
// its holder's (GET key == value in the same atomic step as the write).
// ok is false when l is not a lease of r.
func (r *Redis) Fence(l Lease) (key, value string, ok bool) {
	x, ok := l.(*redisLease)
	if !ok || x.r != r {
		return "", "", false
	}
	return x.key, x.value, true
}
