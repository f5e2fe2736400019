package chainsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the chain store of a fleet. Layout, under its prefix:
//
//	PREFIX chains          hash: chain id -> record JSON (v, h, dsl, del, by, at)
//	PREFIX chains:rev      the revision counter
//	PREFIX chains:changes  stream of changes, entry id 0-REV, fields id, v,
//	                       h, del; the last 1,000 are kept (a follower
//	                       further behind lists the store again)
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewRedis returns the store on rdb (which must honour context
// deadlines, as redisconn.Open sets it).
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix}
}

func (s *Redis) keys() []string {
	return []string{s.prefix + "chains", s.prefix + "chains:rev", s.prefix + "chains:changes"}
}

// record is a chain as the hash holds it.
type record struct {
	V   int64  `json:"v"`
	H   string `json:"h"`
	DSL string `json:"dsl"`
	Del bool   `json:"del,omitempty"`
	By  string `json:"by,omitempty"`
	At  int64  `json:"at"`
}

func (r *record) chain(id string) Chain {
	return Chain{ID: id, Version: r.V, Hash: r.H, DSL: []byte(r.DSL), Deleted: r.Del, UpdatedBy: r.By,
		UpdatedAt: time.UnixMilli(r.At).UTC()}
}

// changeScript: KEYS chains, rev, changes; ARGV id, expect, hash, record
// JSON without its version (v is set here), deleted (1/0). Answers {version,
// changed (1/0)}, or {-1} (conflict), {-2} (nothing to delete).
var changeScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local v, h, del = 0, '', true
if cur then
  local c = cjson.decode(cur)
  v, h, del = c.v, c.h, c.del == true
end
local expect = tonumber(ARGV[2])
if expect >= 0 and v ~= expect then return {-1} end
if ARGV[5] == '1' then
  if not cur or del then return {-2} end
elseif cur and not del and h == ARGV[3] then
  return {v, 0}
end
local nv = v + 1
local rec = string.gsub(ARGV[4], '^{', '{"v":' .. nv .. ',', 1)
redis.call('HSET', KEYS[1], ARGV[1], rec)
local rev = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[3], 'MAXLEN', '~', 1000, '0-' .. rev, 'id', ARGV[1], 'v', nv, 'h', ARGV[3], 'del', ARGV[5])
return {nv, 1}
`)

func (s *Redis) change(ctx context.Context, id string, dsl []byte, expect int64, by string, del bool) (Chain, error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	r := record{DSL: string(dsl), Del: del, By: by, At: now.UnixMilli()}
	if !del {
		r.H = Hash(dsl)
	}
	body, err := json.Marshal(struct {
		H   string `json:"h"`
		DSL string `json:"dsl"`
		Del bool   `json:"del,omitempty"`
		By  string `json:"by,omitempty"`
		At  int64  `json:"at"`
	}{r.H, r.DSL, r.Del, r.By, r.At})
	if err != nil {
		return Chain{}, err
	}
	flag := "0"
	if del {
		flag = "1"
	}
	res, err := changeScript.Run(ctx, s.rdb, s.keys(), id, expect, r.H, body, flag).Int64Slice()
	if err != nil {
		return Chain{}, fmt.Errorf("chain store: %w", err)
	}
	switch res[0] {
	case -1:
		return Chain{}, fmt.Errorf("%w: chain %q", ErrConflict, id)
	case -2:
		return Chain{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if res[1] == 0 {
		return s.Get(ctx, id)
	}
	r.V = res[0]
	return r.chain(id), nil
}

// Put implements Store.
func (s *Redis) Put(ctx context.Context, id string, dsl []byte, expect int64, by string) (Chain, error) {
	return s.change(ctx, id, dsl, expect, by, false)
}

// Delete implements Store.
func (s *Redis) Delete(ctx context.Context, id string, expect int64, by string) error {
	_, err := s.change(ctx, id, nil, expect, by, true)
	return err
}

// Get implements Store.
func (s *Redis) Get(ctx context.Context, id string) (Chain, error) {
	b, err := s.rdb.HGet(ctx, s.keys()[0], id).Bytes()
	if errors.Is(err, redis.Nil) {
		return Chain{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return Chain{}, fmt.Errorf("chain store: %w", err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return Chain{}, fmt.Errorf("chain store: chain %q: %w", id, err)
	}
	return r.chain(id), nil
}

// List implements Store.
func (s *Redis) List(ctx context.Context) ([]Chain, error) {
	all, err := s.rdb.HGetAll(ctx, s.keys()[0]).Result()
	if err != nil {
		return nil, fmt.Errorf("chain store: %w", err)
	}
	out := make([]Chain, 0, len(all))
	for id, v := range all {
		var r record
		if json.Unmarshal([]byte(v), &r) == nil {
			out = append(out, r.chain(id))
		}
	}
	return out, nil
}

// Rev implements Store.
func (s *Redis) Rev(ctx context.Context) (int64, error) {
	n, err := s.rdb.Get(ctx, s.keys()[1]).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("chain store: %w", err)
	}
	return n, nil
}

// changesBlock is how long one XREAD of the feed blocks; an XREAD not
// answered a second after that is a frozen Redis (an error).
const changesBlock = time.Second

// Changes implements Store: it holds one connection blocked in XREAD.
func (s *Redis) Changes(ctx context.Context, after int64) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		pos := "0-" + strconv.FormatInt(after, 10)
		for {
			rctx, cancel := context.WithTimeout(ctx, changesBlock+time.Second)
			res, err := s.rdb.XRead(rctx, &redis.XReadArgs{Streams: []string{s.keys()[2], pos}, Block: changesBlock, Count: 100}).Result()
			cancel()
			switch {
			case errors.Is(err, redis.Nil):
				// Quiet: check that the store did not go back (a Redis that
				// restarted without its data numbers from 1 again).
				_, at, _ := parseID(pos)
				if rev, err := s.Rev(ctx); err == nil && rev < at {
					yield(Change{}, fmt.Errorf("chain store: its revision went back from %d to %d: it lost its data", at, rev))
					return
				}
				continue
			case ctx.Err() != nil:
				yield(Change{}, ctx.Err())
				return
			case err != nil:
				yield(Change{}, fmt.Errorf("chain store: %w", err))
				return
			}
			for _, m := range res[0].Messages {
				pos = m.ID
				_, rev, _ := parseID(m.ID)
				c := Change{Rev: rev, ID: fmt.Sprint(m.Values["id"]), Hash: fmt.Sprint(m.Values["h"]),
					Deleted: m.Values["del"] == "1"}
				c.Version, _ = strconv.ParseInt(fmt.Sprint(m.Values["v"]), 10, 64)
				if !yield(c, nil) {
					return
				}
			}
		}
	}
}

func parseID(s string) (int64, int64, bool) {
	var a, b int64
	_, err := fmt.Sscanf(s, "%d-%d", &a, &b)
	return a, b, err == nil
}
