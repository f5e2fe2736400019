package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/health"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// StateFile is the embedded store of what runs need beyond the process
// (paused runs), under --data.
const StateFile = "state.db"

// pausedRuns opens where serve keeps paused runs: in the Redis of a fleet
// when sessions are kept there (every replica claims any paused run), else
// in DATA/state.db, where the next process on the same --data finds them.
// It returns the store, this process's replica id (id, or a new one when
// ""), and what closes them (after the server has stopped).
func pausedRuns(ctx context.Context, sessionStore, data, id string) (checkpoint.Store, string, func(), error) {
	if id == "" {
		id = health.NewReplicaID()
	}
	if strings.HasPrefix(sessionStore, "redis://") || strings.HasPrefix(sessionStore, "rediss://") {
		conn, err := redisconn.Open(ctx, sessionStore, redisconn.Options{Timeout: 5 * time.Second})
		if err != nil {
			return nil, "", nil, fmt.Errorf("paused runs: %w", err)
		}
		// A replica holds a paused run only between claiming and deleting
		// it; its heartbeat says it is alive meanwhile.
		reg := health.NewRedis(conn.Client, conn.Prefix, 0)
		if err := reg.Join(ctx, health.Replica{ID: id}); err != nil {
			conn.Close()
			return nil, "", nil, fmt.Errorf("paused runs: %w", err)
		}
		closeAll := func() {
			_ = reg.Leave(context.Background())
			_ = conn.Close()
		}
		return checkpoint.NewRedis(conn.Client, conn.Prefix, reg.Key), id, closeAll, nil
	}
	path := filepath.Join(data, StateFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, "", nil, fmt.Errorf("%s is locked (is a ruleagent server running on --data %s?)", path, data)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", path, err)
	}
	// One machine: the process is the only replica, and a run held by an
	// earlier process (killed between claiming and going on) is free.
	alive := func(_ context.Context, replica string) (bool, error) { return replica == id, nil }
	store, err := checkpoint.NewBolt(db, alive)
	if err != nil {
		db.Close()
		return nil, "", nil, err
	}
	return store, id, func() { _ = db.Close() }, nil
}
