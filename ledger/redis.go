package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps the ledger in the fleet's Redis (the session store's, under
// its prefix), so every server adds to the same totals and budgets hold
// across the fleet:
//
//	PREFIX usage:rec:YYYY-MM-DD           list of the day's records (JSON)
//	PREFIX usage:day:YYYY-MM-DD:DIM:ID    hash of a user's or chain's day totals
//	PREFIX usage:applied                  hash: each writer's last batch number
//
// The days expire after the retention, counted from the end of their day.
// A batch is one MULTI/EXEC transaction, and so is a read of totals with
// the writer's last batch number.
type Redis struct {
	rdb       redis.UniversalClient
	prefix    string
	retention time.Duration
}

// NewRedis keeps the ledger in rdb under prefix, each day for retention.
func NewRedis(rdb redis.UniversalClient, prefix string, retention time.Duration) *Redis {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Redis{rdb: rdb, prefix: prefix, retention: retention}
}

// Name implements Store.
func (s *Redis) Name() string { return "redis" }

func (s *Redis) recKey(day string) string { return s.prefix + "usage:rec:" + day }
func (s *Redis) appliedKey() string       { return s.prefix + "usage:applied" }

func (s *Redis) dayKey(k DayKey) string {
	return s.prefix + "usage:day:" + k.Day + ":" + k.Dim + ":" + strings.ReplaceAll(url.PathEscape(k.ID), ":", "%3A")
}

// expiry is when a day's keys go: the end of the day plus the retention.
func (s *Redis) expiry(day string) time.Time {
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return time.Now().Add(s.retention)
	}
	return d.AddDate(0, 0, 1).Add(s.retention)
}

// The fields of a day-totals hash.
var totalFields = [...]string{"c", "u", "in", "out", "cin", "rsn", "tot", "cost", "llm", "tc", "te", "tms"}

func (t *Totals) fields() [len(totalFields)]*int64 {
	return [...]*int64{&t.Calls, &t.Unpriced, &t.InputTokens, &t.OutputTokens, &t.CachedInputTokens, &t.ReasoningTokens,
		&t.TotalTokens, (*int64)(&t.Cost), &t.LLMMs, &t.ToolCalls, &t.ToolErrors, &t.ToolMs}
}

// Append implements Store.
func (s *Redis) Append(ctx context.Context, b Batch) error {
	recs := b.Records
	byDay := map[string][]any{}
	var order []string
	for i := range recs {
		v, err := json.Marshal(&recs[i])
		if err != nil {
			return err
		}
		d := recs[i].Day()
		if _, ok := byDay[d]; !ok {
			order = append(order, d)
		}
		byDay[d] = append(byDay[d], v)
	}
	totals := batchTotals(recs)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, d := range order {
			p.RPush(ctx, s.recKey(d), byDay[d]...)
			p.ExpireAt(ctx, s.recKey(d), s.expiry(d))
		}
		for k, t := range totals {
			key := s.dayKey(k)
			for i, f := range t.fields() {
				if *f != 0 {
					p.HIncrBy(ctx, key, totalFields[i], *f)
				}
			}
			p.ExpireAt(ctx, key, s.expiry(k.Day))
		}
		p.HSet(ctx, s.appliedKey(), b.Writer, b.Seq)
		p.Expire(ctx, s.appliedKey(), s.retention)
		return nil
	})
	return err
}

// scanPage is how many records Scan reads per round trip.
const scanPage = 500

// Scan implements Store.
func (s *Redis) Scan(ctx context.Context, fromDay, toDay string, fn func(*Record) bool) error {
	for _, d := range days(fromDay, toDay) {
		for start := int64(0); ; start += scanPage {
			page, err := s.rdb.LRange(ctx, s.recKey(d), start, start+scanPage-1).Result()
			if err != nil {
				return err
			}
			for _, v := range page {
				var r Record
				if err := json.Unmarshal([]byte(v), &r); err != nil {
					return err
				}
				if !fn(&r) {
					return nil
				}
			}
			if len(page) < scanPage {
				break
			}
		}
	}
	return nil
}

// DayTotals implements Store: one round trip (one MULTI/EXEC) for every
// key and the writer's last batch.
func (s *Redis) DayTotals(ctx context.Context, writer string, keys []DayKey) ([]Totals, uint64, error) {
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	var appliedCmd *redis.StringCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, s.dayKey(k))
		}
		appliedCmd = p.HGet(ctx, s.appliedKey(), writer)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	applied, err := appliedCmd.Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, err
	}
	out := make([]Totals, len(keys))
	for i, c := range cmds {
		m := c.Val()
		for j, f := range out[i].fields() {
			if v, ok := m[totalFields[j]]; ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, 0, err
				}
				*f = n
			}
		}
	}
	return out, applied, nil
}

// Prune implements Store: Redis expires the days itself.
func (s *Redis) Prune(context.Context, string) error { return nil }
