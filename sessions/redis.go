package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/state/lease"
	"github.com/ruleagent/ruleagent/state/redisconn"
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
//	PREFIX lock:ID      the lease of a run in progress ("TOKEN OWNER", PX
//	                    the lease TTL, renewed every TTL/3; state/lease)
//	PREFIX lock:lease:fence  the lease token counter
//
// A Put is one Lua script, so the version check, the lease check of a
// fenced record and the write are one atomic step.
type Redis struct {
	conn   *redisconn.Conn
	rdb    *redis.Client
	prefix string
	addr   string
	leases *lease.Redis
	// owned: Close closes the connection (OpenRedis made it).
	owned bool
}

// DefaultRedisPrefix prefixes every key.
const DefaultRedisPrefix = redisconn.DefaultPrefix

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// LeaseTTL is how long a session lease outlives a process that died
	// holding it (lease.DefaultTTL, 6 s, when 0); it is renewed every
	// LeaseTTL/3 while the run goes on.
	LeaseTTL time.Duration
	// Owner names this process in the leases it holds (a replica id).
	Owner string
}

// OpenRedis connects to the Redis at rawURL (redis://[user:pass@]host:port/db
// or rediss:// for TLS; ?prefix=NAME: sets the key prefix) and checks that
// it answers.
func OpenRedis(ctx context.Context, rawURL string) (*Redis, error) {
	c, err := redisconn.Open(ctx, rawURL, redisconn.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("session store %w", err)
	}
	s := NewRedis(c, RedisOptions{})
	s.owned = true
	return s, nil
}

// NewRedis returns the store on an open connection (shared with the
// fleet's other packages); Close leaves the connection open.
func NewRedis(c *redisconn.Conn, o RedisOptions) *Redis {
	return &Redis{conn: c, rdb: c.Client, prefix: c.Prefix, addr: c.Addr,
		leases: lease.NewRedis(c.Client, c.Prefix+"lock:", lease.Options{TTL: o.LeaseTTL, Owner: o.Owner})}
}

// Name implements Store.
func (s *Redis) Name() string { return "redis " + s.addr }

func (s *Redis) recordKey(id string) string { return s.prefix + "session:" + id }
func (s *Redis) indexKey() string           { return s.prefix + "sessions" }

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

// putScript: KEYS session, index, lease (fenced writes); ARGV expected
// version, record, info, expiry (Unix ms, 0 for none), id, updated (Unix
// ms), the lease's value ("" for an unfenced write).
var putScript = redis.NewScript(`
if ARGV[7] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[7] then return -2 end
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
	lockKey, held := s.leases.Key(rec.ID), ""
	if rec.lease != nil {
		var ok bool
		if lockKey, held, ok = s.leases.Fence(rec.lease); !ok {
			return fmt.Errorf("session %s: fenced with a lease of another store", rec.ID)
		}
	}
	n, err := putScript.Run(ctx, s.rdb, []string{s.recordKey(rec.ID), s.indexKey(), lockKey},
		strconv.FormatInt(rec.Version, 10), data, info, exp, rec.ID, next.Updated.UnixMilli(), held).Int64()
	if err != nil {
		return s.err(err)
	}
	switch n {
	case -2:
		return fmt.Errorf("%w: %s is no longer held by this run", ErrLeaseLost, rec.lease.Name())
	case -1:
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

// Lock implements Store: a state/lease lease, renewed until released.
func (s *Redis) Lock(ctx context.Context, id string) (Lease, error) {
	l, err := acquire(ctx, s.leases, id)
	return l, s.err(err)
}

// Close implements Store: its leases end (their Lost is closed).
func (s *Redis) Close() error {
	s.leases.Close()
	if !s.owned {
		return nil
	}
	return s.conn.Close()
}

func (s *Redis) err(err error) error {
	if errors.Is(err, redis.ErrClosed) {
		return ErrClosed
	}
	return err
}
