package sessions

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/state/redisconn"
)

// DB is the store's bbolt database, for what a server keeps beside its
// sessions in the same file (the usage ledger, in buckets of its own).
func (s *Bolt) DB() *bolt.DB { return s.db }

// Conn is the store's Redis connection and key prefix, for what a fleet
// keeps beside its sessions (the usage ledger, under the same prefix).
func (s *Redis) Conn() *redisconn.Conn { return s.conn }
