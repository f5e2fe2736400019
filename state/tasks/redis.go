package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps a fleet's tasks: PREFIX task:{ID}, the task's JSON, expiring
// (PEXPIREAT) when the task does. Update watches the key and writes in a
// MULTI, retried when another replica changed the task in between.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	now    func() time.Time
}

// NewRedis returns the store on rdb, its keys under prefix.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, now: time.Now}
}

func (s *Redis) key(id string) string { return s.prefix + "task:{" + id + "}" }

// channel is where the changes are published.
func (s *Redis) channel() string { return s.prefix + "tasks:changed" }

// changed publishes a change; a failure only delays the listeners, who
// read the store now and then.
func (s *Redis) changed(ctx context.Context, id string) {
	_ = s.rdb.Publish(ctx, s.channel(), id).Err()
}

// Subscribe implements Changes, on its own connection (SUBSCRIBE PREFIX
// tasks:changed), which go-redis re-establishes after a failure.
func (s *Redis) Subscribe(ctx context.Context, fn func(id string)) error {
	ps := s.rdb.Subscribe(ctx, s.channel())
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return err
	}
	go func() {
		defer ps.Close()
		ch := ps.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case msg, ok := <-ch:
				if !ok {
					return
				}
				fn(msg.Payload)
			}
		}
	}()
	return nil
}

// updateRetries bounds the optimistic retries of one Update.
const updateRetries = 16

// Create implements Store.
func (s *Redis) Create(ctx context.Context, t *Task) error {
	created(t, s.now())
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = s.rdb.SetArgs(ctx, s.key(t.ID), raw, redis.SetArgs{Mode: "NX", ExpireAt: t.Expires}).Err()
	if errors.Is(err, redis.Nil) {
		return ErrExists
	}
	if err == nil {
		s.changed(ctx, t.ID)
	}
	return err
}

// Get implements Store.
func (s *Redis) Get(ctx context.Context, id string) (*Task, error) {
	return s.get(ctx, s.rdb, id)
}

func (s *Redis) get(ctx context.Context, c redis.Cmdable, id string) (*Task, error) {
	raw, err := c.Get(ctx, s.key(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var t Task
	if err := json.Unmarshal(raw, &t); err != nil || !live(&t, s.now()) {
		return nil, ErrNotFound
	}
	return &t, nil
}

// Update implements Store.
func (s *Redis) Update(ctx context.Context, id string, fn func(*Task) error) (*Task, error) {
	key := s.key(id)
	var t *Task
	for range updateRetries {
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var err error
			if t, err = s.get(ctx, tx, id); err != nil {
				return err
			}
			if err := apply(t, s.now(), fn); err != nil {
				return err
			}
			raw, err := json.Marshal(t)
			if err != nil {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, raw, 0)
				p.PExpireAt(ctx, key, t.Expires)
				return nil
			})
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			if err == nil {
				s.changed(ctx, id)
			}
			return t, err
		}
	}
	return t, errors.New("mcp task " + id + ": too many concurrent changes")
}
