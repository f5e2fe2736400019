package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// APIKey is a per-user API key as the store keeps it: never the secret,
// only its hash (see package server/identity, which makes and checks
// keys).
type APIKey struct {
	// ID names the key; it is the public part of the key itself.
	ID   string `json:"id"`
	User string `json:"user"`
	// Name is a note on what the key is for.
	Name string `json:"name,omitempty"`
	// Hash is the SHA-256 of the key's secret part, hex-encoded.
	Hash    string    `json:"hash"`
	Created time.Time `json:"created"`
	// Role is what the key grants beyond its user's own runs ("operator",
	// or none).
	Role string `json:"role,omitempty"`
	// Expires is when the key stops working (zero: never).
	Expires time.Time `json:"expires,omitzero"`
	// LastUsed is when a request last came with the key, to the minute
	// (see TouchKey); zero when never.
	LastUsed time.Time `json:"lastUsed,omitzero"`
}

// KeyStore keeps API keys: the embedded stores keep them beside the
// sessions (bolt in the same file), Redis for a fleet.
type KeyStore interface {
	// PutKey stores k (a new id; an existing one is replaced).
	PutKey(ctx context.Context, k APIKey) error
	// GetKey returns the key with id, or ErrNoKey.
	GetKey(ctx context.Context, id string) (APIKey, error)
	// ListKeys returns every key, oldest first.
	ListKeys(ctx context.Context) ([]APIKey, error)
	// DeleteKey removes the key with id (revokes it), or says ErrNoKey.
	DeleteKey(ctx context.Context, id string) error
	// TouchKey records that the key with id was used at t, or says
	// ErrNoKey; it never brings back a revoked key.
	TouchKey(ctx context.Context, id string, t time.Time) error
}

// ErrNoKey: no API key has this id (never made, or revoked).
var ErrNoKey = errors.New("no such API key")

var (
	_ KeyStore = (*Bolt)(nil)
	_ KeyStore = (*Redis)(nil)
	_ KeyStore = (*Memory)(nil)
)

func sortKeys(keys []APIKey) []APIKey {
	slices.SortFunc(keys, func(a, b APIKey) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return keys
}

// bucketKeys holds the API keys of the bolt store, by id.
var bucketKeys = []byte("apikeys")

// PutKey implements KeyStore.
func (s *Bolt) PutKey(_ context.Context, k APIKey) error {
	v, err := json.Marshal(k)
	if err != nil {
		return err
	}
	return s.err(s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketKeys)
		if err != nil {
			return err
		}
		return b.Put([]byte(k.ID), v)
	}))
}

// GetKey implements KeyStore.
func (s *Bolt) GetKey(_ context.Context, id string) (APIKey, error) {
	var k APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		if b == nil {
			return ErrNoKey
		}
		v := b.Get([]byte(id))
		if v == nil {
			return ErrNoKey
		}
		return json.Unmarshal(v, &k)
	})
	return k, s.err(err)
}

// ListKeys implements KeyStore.
func (s *Bolt) ListKeys(_ context.Context) ([]APIKey, error) {
	var out []APIKey
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var k APIKey
			if err := json.Unmarshal(v, &k); err != nil {
				return err
			}
			out = append(out, k)
			return nil
		})
	})
	return sortKeys(out), s.err(err)
}

// DeleteKey implements KeyStore.
func (s *Bolt) DeleteKey(_ context.Context, id string) error {
	return s.err(s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		if b == nil || b.Get([]byte(id)) == nil {
			return ErrNoKey
		}
		return b.Delete([]byte(id))
	}))
}

// TouchKey implements KeyStore.
func (s *Bolt) TouchKey(_ context.Context, id string, t time.Time) error {
	return s.err(s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		if b == nil {
			return ErrNoKey
		}
		v := b.Get([]byte(id))
		if v == nil {
			return ErrNoKey
		}
		var k APIKey
		if err := json.Unmarshal(v, &k); err != nil {
			return err
		}
		k.LastUsed = t
		nv, err := json.Marshal(k)
		if err != nil {
			return err
		}
		return b.Put([]byte(id), nv)
	}))
}

// The Redis layout: PREFIX apikey:ID holds the key's JSON, PREFIX apikeys
// the set of ids, PREFIX apikeys:used each key's last use (Unix
// milliseconds by id), kept apart so that a use never rewrites the key.
func (s *Redis) apiKeyKey(id string) string { return s.prefix + "apikey:" + id }
func (s *Redis) apiKeysKey() string         { return s.prefix + "apikeys" }
func (s *Redis) apiKeysUsedKey() string     { return s.prefix + "apikeys:used" }

// touchScript records a key's last use only while the key exists, so
// that a use racing its revocation leaves nothing behind.
var touchScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`)

// TouchKey implements KeyStore.
func (s *Redis) TouchKey(ctx context.Context, id string, t time.Time) error {
	n, err := touchScript.Run(ctx, s.rdb, []string{s.apiKeyKey(id), s.apiKeysUsedKey()}, id, t.UnixMilli()).Int()
	if err != nil {
		return s.err(err)
	}
	if n == 0 {
		return ErrNoKey
	}
	return nil
}

// PutKey implements KeyStore.
func (s *Redis) PutKey(ctx context.Context, k APIKey) error {
	v, err := json.Marshal(k)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.apiKeyKey(k.ID), v, 0)
		p.SAdd(ctx, s.apiKeysKey(), k.ID)
		return nil
	})
	return s.err(err)
}

// GetKey implements KeyStore.
func (s *Redis) GetKey(ctx context.Context, id string) (APIKey, error) {
	var k APIKey
	var get *redis.StringCmd
	var used *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, s.apiKeyKey(id))
		used = p.HGet(ctx, s.apiKeysUsedKey(), id)
		return nil
	})
	b, gerr := get.Bytes()
	if errors.Is(gerr, redis.Nil) {
		return k, ErrNoKey
	}
	if gerr != nil {
		return k, s.err(gerr)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return k, s.err(err)
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return k, err
	}
	if ms, err := used.Int64(); err == nil {
		k.LastUsed = time.UnixMilli(ms).UTC()
	}
	return k, nil
}

// ListKeys implements KeyStore.
func (s *Redis) ListKeys(ctx context.Context) ([]APIKey, error) {
	ids, err := s.rdb.SMembers(ctx, s.apiKeysKey()).Result()
	if err != nil {
		return nil, s.err(err)
	}
	var out []APIKey
	for _, id := range ids {
		k, err := s.GetKey(ctx, id)
		if errors.Is(err, ErrNoKey) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return sortKeys(out), nil
}

// DeleteKey implements KeyStore.
func (s *Redis) DeleteKey(ctx context.Context, id string) error {
	var del *redis.IntCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		del = p.Del(ctx, s.apiKeyKey(id))
		p.SRem(ctx, s.apiKeysKey(), id)
		p.HDel(ctx, s.apiKeysUsedKey(), id)
		return nil
	})
	if err != nil {
		return s.err(err)
	}
	if del.Val() == 0 {
		return ErrNoKey
	}
	return nil
}

// memKeys are the API keys of the memory store.
type memKeys struct {
	mu   sync.Mutex
	keys map[string]APIKey
}

// PutKey implements KeyStore.
func (m *Memory) PutKey(_ context.Context, k APIKey) error {
	m.apiKeys.mu.Lock()
	defer m.apiKeys.mu.Unlock()
	if m.apiKeys.keys == nil {
		m.apiKeys.keys = map[string]APIKey{}
	}
	m.apiKeys.keys[k.ID] = k
	return nil
}

// GetKey implements KeyStore.
func (m *Memory) GetKey(_ context.Context, id string) (APIKey, error) {
	m.apiKeys.mu.Lock()
	defer m.apiKeys.mu.Unlock()
	k, ok := m.apiKeys.keys[id]
	if !ok {
		return k, ErrNoKey
	}
	return k, nil
}

// ListKeys implements KeyStore.
func (m *Memory) ListKeys(_ context.Context) ([]APIKey, error) {
	m.apiKeys.mu.Lock()
	defer m.apiKeys.mu.Unlock()
	out := make([]APIKey, 0, len(m.apiKeys.keys))
	for _, k := range m.apiKeys.keys {
		out = append(out, k)
	}
	return sortKeys(out), nil
}

// TouchKey implements KeyStore.
func (m *Memory) TouchKey(_ context.Context, id string, t time.Time) error {
	m.apiKeys.mu.Lock()
	defer m.apiKeys.mu.Unlock()
	k, ok := m.apiKeys.keys[id]
	if !ok {
		return ErrNoKey
	}
	k.LastUsed = t
	m.apiKeys.keys[id] = k
	return nil
}

// DeleteKey implements KeyStore.
func (m *Memory) DeleteKey(_ context.Context, id string) error {
	m.apiKeys.mu.Lock()
	defer m.apiKeys.mu.Unlock()
	if _, ok := m.apiKeys.keys[id]; !ok {
		return ErrNoKey
	}
	delete(m.apiKeys.keys, id)
	return nil
}
