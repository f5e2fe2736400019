package sessions

import (
	"github.com/redis/go-redis/v9"
	bolt "go.etcd.io/bbolt"
)

// DB is the store's bbolt database, for what a server keeps beside its
// sessions in the same file (the usage ledger, in buckets of its own).
func (s *Bolt) DB() *bolt.DB { return s.db }

// Client is the store's Redis client and key prefix, for what a fleet
// keeps beside its sessions (the usage ledger, under the same prefix).
func (s *Redis) Client() (*redis.Client, string) { return s.rdb, s.prefix }
