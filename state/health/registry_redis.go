package health

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is the registry of a fleet. Layout, under its prefix:
//
//	PREFIX replica:ID   the replica's heartbeat: its Replica JSON, PX TTL,
//	                    written every TTL/3
//	PREFIX replicas     sorted set of replica ids by last heartbeat (ms),
//	                    for lists; ids silent for an hour leave it
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
	link   *Link

	mu   sync.Mutex
	self Replica
	stop chan struct{}
	wg   sync.WaitGroup
}

// DefaultHeartbeatTTL is how long a replica that stopped beating is
// still counted alive.
const DefaultHeartbeatTTL = 6 * time.Second

// forgetAfter is how long a dead replica stays listed.
const forgetAfter = time.Hour

// NewRedis returns the fleet registry on rdb (which must honour context
// deadlines, as redisconn.Open sets it). ttl is the heartbeat's life
// (DefaultHeartbeatTTL when 0).
func NewRedis(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = DefaultHeartbeatTTL
	}
	return &Redis{rdb: rdb, prefix: prefix, ttl: ttl, link: NewLink("replica heartbeat")}
}

// Key is the heartbeat key of replica id: a script that must act only
// while a replica lives (a checkpoint claim) checks it exists.
func (r *Redis) Key(id string) string { return r.prefix + "replica:" + id }

func (r *Redis) indexKey() string { return r.prefix + "replicas" }

// Join implements Registry: it writes the first heartbeat (an error if
// Redis does not take it) and keeps beating every TTL/3 until Leave.
func (r *Redis) Join(ctx context.Context, self Replica) error {
	if self.ID == "" {
		return errors.New("a replica needs an id")
	}
	r.mu.Lock()
	if r.stop != nil {
		r.mu.Unlock()
		return errors.New("the replica has joined already")
	}
	if self.Started.IsZero() {
		self.Started = time.Now()
	}
	r.self = self
	r.stop = make(chan struct{})
	stop := r.stop
	r.mu.Unlock()
	if err := r.beat(ctx); err != nil {
		r.mu.Lock()
		r.stop = nil
		r.mu.Unlock()
		return err
	}
	r.wg.Go(func() { r.loop(stop) })
	return nil
}

func (r *Redis) loop(stop chan struct{}) {
	t := time.NewTicker(r.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), r.ttl/3)
			_ = r.beat(ctx)
			cancel()
		}
	}
}

// beat writes the heartbeat (again: a replica whose heartbeat lapsed
// during a gap comes back).
func (r *Redis) beat(ctx context.Context) error {
	r.mu.Lock()
	me := r.self
	r.mu.Unlock()
	me.Seen = time.Now()
	me.Alive = true
	b, err := json.Marshal(me)
	if err != nil {
		return err
	}
	_, err = r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.Key(me.ID), b, r.ttl)
		p.ZAdd(ctx, r.indexKey(), redis.Z{Score: float64(me.Seen.UnixMilli()), Member: me.ID})
		return nil
	})
	if err != nil {
		r.link.Down(err)
		return err
	}
	r.link.Up()
	return nil
}

// SetDraining implements Registry.
func (r *Redis) SetDraining(d bool) {
	r.mu.Lock()
	r.self.Draining = d
	r.mu.Unlock()
}

// Leave implements Registry.
func (r *Redis) Leave(ctx context.Context) error {
	r.mu.Lock()
	stop, id := r.stop, r.self.ID
	r.stop = nil
	r.mu.Unlock()
	if stop == nil {
		return nil
	}
	close(stop)
	r.wg.Wait()
	r.link.Down(errors.New("left the fleet"))
	_, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, r.Key(id))
		p.ZRem(ctx, r.indexKey(), id)
		return nil
	})
	return err
}

// List implements Registry.
func (r *Redis) List(ctx context.Context) ([]Replica, error) {
	zs, err := r.rdb.ZRangeWithScores(ctx, r.indexKey(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	if len(zs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(zs))
	for i, z := range zs {
		keys[i] = r.Key(z.Member.(string))
	}
	vals, err := r.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	var out []Replica
	var gone []any
	for i, z := range zs {
		id := z.Member.(string)
		seen := time.UnixMilli(int64(z.Score))
		s, ok := vals[i].(string)
		var rep Replica
		if ok && json.Unmarshal([]byte(s), &rep) == nil {
			rep.Alive = true
		} else {
			if time.Since(seen) > forgetAfter {
				gone = append(gone, id)
				continue
			}
			rep = Replica{ID: id, Seen: seen}
		}
		out = append(out, rep)
	}
	if len(gone) > 0 {
		r.rdb.ZRem(ctx, r.indexKey(), gone...)
	}
	return out, nil
}

// Alive implements Registry.
func (r *Redis) Alive(ctx context.Context, id string) (bool, error) {
	n, err := r.rdb.Exists(ctx, r.Key(id)).Result()
	return n == 1, err
}

// Probe implements Registry.
func (r *Redis) Probe() Probe { return r.link }
