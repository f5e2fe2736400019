package runrecord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps a fleet's records. Layout, under its prefix (the run id in
// braces: a run's keys share one Redis Cluster slot):
//
//	PREFIX record:{ID}        the record, gzipped JSON
//	PREFIX record:{ID}:meta   its Meta, JSON
//	PREFIX records            sorted set of run ids by start (ms), for lists
//
// Both run keys expire Retention after the run ended; List drops the ids
// whose keys are gone.
type Redis struct {
	rdb    *redis.Client
	prefix string
	o      Options
}

// NewRedis returns the records on rdb (which must honour context
// deadlines, as redisconn.Open sets it), under prefix.
func NewRedis(rdb *redis.Client, prefix string, o Options) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, o: o.Fill()}
}

func (r *Redis) dataKey(id string) string { return r.prefix + "record:{" + id + "}" }
func (r *Redis) metaKey(id string) string { return r.prefix + "record:{" + id + "}:meta" }
func (r *Redis) indexKey() string         { return r.prefix + "records" }

// Name implements Store.
func (r *Redis) Name() string { return "redis " + r.rdb.Options().Addr }

// Put implements Store: one pipeline.
func (r *Redis) Put(ctx context.Context, rec *Record) error {
	data, m, meta, err := encoded(rec)
	if err != nil {
		return err
	}
	end := m.EndedAt
	if end.IsZero() {
		end = time.Now()
	}
	ttl := time.Until(end.Add(r.o.Retention))
	if ttl <= 0 {
		return nil
	}
	_, err = r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.dataKey(m.RunID), data, ttl)
		p.Set(ctx, r.metaKey(m.RunID), meta, ttl)
		p.ZAdd(ctx, r.indexKey(), redis.Z{Score: float64(m.StartedAt.UnixMilli()), Member: m.RunID})
		// The index forgets what expired long ago, a little each time.
		p.ZRemRangeByScore(ctx, r.indexKey(), "-inf", fmt.Sprint(time.Now().Add(-r.o.Retention-24*time.Hour).UnixMilli()))
		return nil
	})
	if err != nil {
		return fmt.Errorf("run records: %w", err)
	}
	return nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, runID string) (*Record, error) {
	data, err := r.rdb.Get(ctx, r.dataKey(runID)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("run records: %w", err)
	}
	rec, err := decode(data)
	if err != nil {
		return nil, err
	}
	rec.Meta.Bytes = len(data)
	return rec, nil
}

// List implements Store: the index newest first, a page of metas at a
// time, until the limit is filled.
func (r *Redis) List(ctx context.Context, f Filter) ([]Meta, error) {
	const page = 200
	limit := f.limit()
	var out []Meta
	for start := int64(0); len(out) < limit; {
		ids, err := r.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: r.indexKey(), Start: start, Stop: start + page - 1, Rev: true}).Result()
		if err != nil {
			return nil, fmt.Errorf("run records: %w", err)
		}
		if len(ids) == 0 {
			break
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = r.metaKey(id)
		}
		vals, err := r.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, fmt.Errorf("run records: %w", err)
		}
		var gone []any
		for i, v := range vals {
			s, ok := v.(string)
			var m Meta
			if !ok || json.Unmarshal([]byte(s), &m) != nil {
				gone = append(gone, ids[i])
				continue
			}
			if f.match(&m) && len(out) < limit {
				out = append(out, m)
			}
		}
		if len(gone) > 0 {
			r.rdb.ZRem(ctx, r.indexKey(), gone...)
		}
		// The ids removed no longer take a place in the index.
		start += int64(len(ids) - len(gone))
	}
	return sortMetas(out, limit), nil
}

// Delete implements Store.
func (r *Redis) Delete(ctx context.Context, runID string) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.dataKey(runID), r.metaKey(runID))
		p.ZRem(ctx, r.indexKey(), runID)
		return nil
	})
	return err
}
