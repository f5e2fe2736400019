package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the shared store: several ruleagent processes serving one fleet
// keep their sessions in one Redis (a single server or a primary; Redis
// Cluster is not supported: a write touches two keys).
//
// Layout, under a prefix ("ruleagent:" unless the URL says ?prefix=):
//
//	PREFIX session:ID   hash: v (version), d (record JSON), i (Info JSON);
//	                    expires with the session (PEXPIREAT)
//	PREFIX sessions     sorted set of ids by last update, for lists
//	PREFIX lock:ID      the lease of a run in progress (PX leaseTTL,
//	                    renewed while the run goes on)
//
// A Put is one Lua script, so the version check and the write are one
// atomic step.
type Redis struct {
	rdb    *redis.Client
	prefix string
	addr   string
	// leaseTTL is how long a lease outlives a process that died holding
	// it; it is renewed every leaseTTL/3 while the run goes on.
	leaseTTL time.Duration
}

// DefaultRedisPrefix prefixes every key.
const DefaultRedisPrefix = "ruleagent:"

// OpenRedis connects to the Redis at rawURL (redis://[user:pass@]host:port/db
// or rediss:// for TLS; ?prefix=NAME: sets the key prefix) and checks that
// it answers.
func OpenRedis(ctx context.Context, rawURL string) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("session store URL: %w", err)
	}
	prefix := DefaultRedisPrefix
	q := u.Query()
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("session store URL: %w", err)
	}
	rdb := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("session store redis at %s: %w", opts.Addr, err)
	}
	return &Redis{rdb: rdb, prefix: prefix, addr: opts.Addr, leaseTTL: 30 * time.Second}, nil
}

// Name implements Store.
func (s *Redis) Name() string { return "redis " + s.addr }

func (s *Redis) recordKey(id string) string { return s.prefix + "session:" + id }
func (s *Redis) indexKey() string           { return s.prefix + "sessions" }
func (s *Redis) lockKey(id string) string   { return s.prefix + "lock:" + id }

// Get implements Store.
func (s *Redis) Get(ctx context.Context, id string) (*Record, error) {
	b, err := s.rdb.HGet(ctx, s.recordKey(id), "d").Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, s.err(err)
	}
	return decode(b)
}

// putScript: KEYS session, index; ARGV expected version, record, info,
// expiry (Unix ms, 0 for none), id, updated (Unix ms).
var putScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'v') or '0'
if v ~= ARGV[1] then return -1 end
local nv = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', tostring(nv), 'd', ARGV[2], 'i', ARGV[3])
if ARGV[4] ~= '0' then redis.call('PEXPIREAT', KEYS[1], ARGV[4]) else redis.call('PERSIST', KEYS[1]) end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[5])
return nv
`)

// Put implements Store.
func (s *Redis) Put(ctx context.Context, rec *Record) error {
	next, data, err := rec.next()
	if err != nil {
		return err
	}
	info, err := json.Marshal(next.Info())
	if err != nil {
		return err
	}
	exp := int64(0)
	if !next.Expires.IsZero() {
		exp = next.Expires.UnixMilli()
	}
	n, err := putScript.Run(ctx, s.rdb, []string{s.recordKey(rec.ID), s.indexKey()},
		strconv.FormatInt(rec.Version, 10), data, info, exp, rec.ID, next.Updated.UnixMilli()).Int64()
	if err != nil {
		return s.err(err)
	}
	if n < 0 {
		return ErrConflict
	}
	rec.Version = n
	return nil
}

// Delete implements Store.
func (s *Redis) Delete(ctx context.Context, id string) error {
	var del *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, s.recordKey(id))
		p.ZRem(ctx, s.indexKey(), id)
		return nil
	})
	if err != nil {
		return s.err(err)
	}
	if del.Val() == 0 {
		return ErrNotFound
	}
	return nil
}

// List implements Store. Ids whose session expired leave the index on the
// way.
func (s *Redis) List(ctx context.Context, f Filter) ([]Info, error) {
	ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.indexKey(), Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil {
		return nil, s.err(err)
	}
	cmds := make([]*redis.StringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, s.recordKey(id), "i")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.err(err)
	}
	var out []Info
	var gone []any
	for i, c := range cmds {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, ids[i])
			continue
		}
		var info Info
		if err != nil || json.Unmarshal(b, &info) != nil {
			continue
		}
		if f.match(&info) {
			out = append(out, info)
		}
	}
	if len(gone) > 0 {
		s.rdb.ZRem(ctx, s.indexKey(), gone...)
	}
	return sortInfos(out, f.Limit), nil
}

// renewScript and releaseScript touch a lease only while it is ours.
var (
	renewScript   = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	releaseScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

// Lock implements Store: SET NX with a random token, renewed every third
// of its TTL until released.
func (s *Redis) Lock(ctx context.Context, id string) (Lease, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	key := s.lockKey(id)
	ok, err := s.rdb.SetNX(ctx, key, token, s.leaseTTL).Result()
	if err != nil {
		return nil, s.err(err)
	}
	if !ok {
		return nil, ErrBusy
	}
	l := &redisLease{s: s, key: key, token: token, done: make(chan struct{})}
	l.wg.Add(1)
	go l.renew()
	return l, nil
}

type redisLease struct {
	s     *Redis
	key   string
	token string
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

func (l *redisLease) renew() {
	defer l.wg.Done()
	t := time.NewTicker(l.s.leaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), l.s.leaseTTL/3)
			_ = renewScript.Run(ctx, l.s.rdb, []string{l.key}, l.token, l.s.leaseTTL.Milliseconds()).Err()
			cancel()
		}
	}
}

// Release implements Lease.
func (l *redisLease) Release() {
	l.once.Do(func() {
		close(l.done)
		l.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		// A lease that cannot be released ends with its TTL.
		_ = releaseScript.Run(ctx, l.s.rdb, []string{l.key}, l.token).Err()
	})
}

// Close implements Store.
func (s *Redis) Close() error { return s.rdb.Close() }

func (s *Redis) err(err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return ErrClosed
	}
	return err
}
