package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps a fleet's checkpoints. Layout, under its prefix:
//
//	PREFIX checkpoint:{ID}  hash: data, holder, fence, saved (Unix ms),
//	                        expires (Unix ms, 0: none), thread, owner;
//	                        PEXPIREAT expires
//	PREFIX checkpoints      sorted set of run ids by saved (ms), for lists
//
// A claim checks the holder's heartbeat key (health.Redis.Key) in the
// same script as the change.
type Redis struct {
	rdb       redis.UniversalClient
	prefix    string
	heartbeat func(replica string) string
}

// NewRedis returns the store on rdb; heartbeat names the heartbeat key of
// a replica (health.Redis.Key): a holder whose key is gone is dead.
func NewRedis(rdb redis.UniversalClient, prefix string, heartbeat func(replica string) string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, heartbeat: heartbeat}
}

func (s *Redis) key(runID string) string { return s.prefix + "checkpoint:{" + runID + "}" }
func (s *Redis) indexKey() string        { return s.prefix + "checkpoints" }

// fenceLua computes nf, the fence after f (f false for a new checkpoint: from
// Redis's clock, in µs).
const fenceLua = `
local nf
if f then nf = tonumber(f) + 1 else
  local t = redis.call('TIME')
  nf = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
nf = string.format('%d', nf)
`

// saveScript: KEYS checkpoint, index; ARGV data, holder, fence, saved,
// expires, run id, thread, owner. Answers the new fence, -2 (exists), -1 (none), -3
// (fenced).
var saveScript = redis.NewScript(`
local f = redis.call('HGET', KEYS[1], 'fence')
if ARGV[3] == '0' then
  if f then return '-2' end
else
  if not f then return '-1' end
  if f ~= ARGV[3] then return '-3' end
end
` + fenceLua + `
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'holder', ARGV[2], 'fence', nf, 'saved', ARGV[4], 'expires', ARGV[5], 'thread', ARGV[7], 'owner', ARGV[8])
if ARGV[5] ~= '0' then redis.call('PEXPIREAT', KEYS[1], ARGV[5]) else redis.call('PERSIST', KEYS[1]) end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[6])
return nf
`)

// claimScript: KEYS checkpoint, the current holder's heartbeat; ARGV
// replica, the holder read before. Answers {new fence, data, saved,
// expires}, or {'-1'} (none), {'-3', holder} (claimed), {'-4'} (the holder
// changed meanwhile: read again).
var claimScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'holder', 'fence', 'data', 'saved', 'expires')
local f = h[2]
if not f then return {'-1'} end
if h[1] ~= ARGV[2] then return {'-4'} end
if h[1] ~= '' and redis.call('EXISTS', KEYS[2]) == 1 then return {'-3', h[1]} end
` + fenceLua + `
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'fence', nf)
return {nf, h[3], h[4], h[5]}
`)

// changeScript: KEYS checkpoint, index; ARGV fence, op (release or
// delete), run id. Answers 1, -1 (none) or -3 (fenced).
var changeScript = redis.NewScript(`
local f = redis.call('HGET', KEYS[1], 'fence')
if not f then return -1 end
if f ~= ARGV[1] then return -3 end
if ARGV[2] == 'delete' then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[3])
else
` + fenceLua + `
  redis.call('HSET', KEYS[1], 'holder', '', 'fence', nf)
end
return 1
`)

func codeErr(code string, who any) error {
	switch code {
	case "-1":
		return ErrNotFound
	case "-2":
		return ErrExists
	case "-3":
		if who != nil {
			return fmt.Errorf("%w: %v", ErrClaimed, who)
		}
		return ErrFenced
	}
	return nil
}

// Save implements Store.
func (s *Redis) Save(ctx context.Context, cp *Checkpoint) error {
	now := time.Now().UTC().Truncate(time.Millisecond)
	exp := int64(0)
	if !cp.Expires.IsZero() {
		exp = cp.Expires.UnixMilli()
	}
	res, err := saveScript.Run(ctx, s.rdb, []string{s.key(cp.RunID), s.indexKey()}, cp.Data, cp.Holder,
		strconv.FormatUint(cp.Fence, 10), now.UnixMilli(), exp, cp.RunID, cp.ThreadID, cp.Owner).Text()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := codeErr(res, nil); err != nil {
		return err
	}
	cp.Fence, _ = strconv.ParseUint(res, 10, 64)
	cp.Saved = now
	return nil
}

// Load implements Store.
func (s *Redis) Load(ctx context.Context, runID string) (*Checkpoint, error) {
	h, err := s.rdb.HGetAll(ctx, s.key(runID)).Result()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if len(h) == 0 {
		return nil, ErrNotFound
	}
	cp := &Checkpoint{RunID: runID, Data: []byte(h["data"]), Holder: h["holder"], ThreadID: h["thread"], Owner: h["owner"]}
	cp.Fence, _ = strconv.ParseUint(h["fence"], 10, 64)
	cp.Saved, cp.Expires = msTime(h["saved"]), msTime(h["expires"])
	return cp, nil
}

func msTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Claim implements Store.
func (s *Redis) Claim(ctx context.Context, runID, replica string) (*Checkpoint, error) {
	for range 5 {
		holder, err := s.rdb.HGet(ctx, s.key(runID), "holder").Result()
		if errors.Is(err, redis.Nil) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		res, err := claimScript.Run(ctx, s.rdb, []string{s.key(runID), s.heartbeat(holder)}, replica, holder).Slice()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %w", err)
		}
		code, _ := res[0].(string)
		if code == "-4" {
			continue
		}
		var who any
		if len(res) > 1 {
			who = res[1]
		}
		if err := codeErr(code, who); err != nil {
			return nil, err
		}
		cp := &Checkpoint{RunID: runID, Holder: replica}
		cp.Fence, _ = strconv.ParseUint(code, 10, 64)
		data, _ := res[1].(string)
		saved, _ := res[2].(string)
		exp, _ := res[3].(string)
		cp.Data, cp.Saved, cp.Expires = []byte(data), msTime(saved), msTime(exp)
		return cp, nil
	}
	return nil, fmt.Errorf("%w: it keeps changing hands", ErrClaimed)
}

func (s *Redis) change(ctx context.Context, runID string, fence uint64, op string) error {
	n, err := changeScript.Run(ctx, s.rdb, []string{s.key(runID), s.indexKey()}, strconv.FormatUint(fence, 10), op, runID).Int64()
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return codeErr(strconv.FormatInt(n, 10), nil)
}

// Release implements Store.
func (s *Redis) Release(ctx context.Context, runID string, fence uint64) error {
	return s.change(ctx, runID, fence, "release")
}

// Delete implements Store.
func (s *Redis) Delete(ctx context.Context, runID string, fence uint64) error {
	return s.change(ctx, runID, fence, "delete")
}

// List implements Store. Ids whose checkpoint expired leave the index on
// the way.
func (s *Redis) List(ctx context.Context) ([]Checkpoint, error) {
	ids, err := s.rdb.ZRange(ctx, s.indexKey(), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HMGet(ctx, s.key(id), "holder", "fence", "saved", "expires", "thread", "owner")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	var out []Checkpoint
	var gone []any
	for i, c := range cmds {
		v := c.Val()
		if len(v) < 6 || v[1] == nil {
			gone = append(gone, ids[i])
			continue
		}
		str := func(x any) string { s, _ := x.(string); return s }
		cp := Checkpoint{RunID: ids[i], Holder: str(v[0]), Saved: msTime(str(v[2])), Expires: msTime(str(v[3])),
			ThreadID: str(v[4]), Owner: str(v[5])}
		cp.Fence, _ = strconv.ParseUint(str(v[1]), 10, 64)
		out = append(out, cp)
	}
	if len(gone) > 0 {
		s.rdb.ZRem(ctx, s.indexKey(), gone...)
	}
	return out, nil
}
