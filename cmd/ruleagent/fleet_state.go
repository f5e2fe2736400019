package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/control"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/health"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// StateFile is the embedded store of what runs need beyond the process
// (their events, paused runs), under --data.
const StateFile = "state.db"

// fleetState is what serve keeps beyond its process: the runs' event logs,
// the paused runs (checkpoints), the replica registry (this process's
// heartbeat) and the control bus that reaches the replica running a run.
// In a fleet (sessions in Redis: the fleet's Redis is the session store's)
// they live in that Redis, and every replica claims any paused run; on one
// machine in DATA/state.db, the process its only live replica: the next
// process on the same --data answers the paused runs, and ends the runs an
// earlier process left unfinished.
type fleetState struct {
	replica  string
	registry health.Registry
	events   eventlog.Log
	bus      control.Bus
	// checkpoints keeps the paused runs.
	checkpoints checkpoint.Store
	// db is the embedded store (nil in a fleet), conn the fleet's Redis
	// (nil on one machine).
	db   *bolt.DB
	conn *redisconn.Conn
	// path is the embedded store's file.
	path string
}

// openFleetState opens what serve keeps beyond its process, by where its
// sessions are kept, as replica id (a new one when ""). Close closes it, after the server has stopped.
func openFleetState(ctx context.Context, sessionStore, data, id string) (*fleetState, error) {
	if id == "" {
		id = health.NewReplicaID()
	}
	f := &fleetState{replica: id}
	if isRedisSpec(sessionStore) {
		conn, err := redisconn.Open(ctx, sessionStore, redisconn.Options{Timeout: 5 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("run state (events, paused runs): %w", err)
		}
		f.conn = conn
		reg := health.NewRedis(conn.Client, conn.Prefix, 0)
		if err := reg.Join(ctx, health.Replica{ID: f.replica}); err != nil {
			conn.Close()
			return nil, fmt.Errorf("replica registry: %w", err)
		}
		f.registry = reg
		bus, err := control.NewRedis(ctx, conn.Client, conn.Prefix, f.replica, control.RedisOptions{Alive: reg.Alive})
		if err != nil {
			_ = reg.Leave(context.Background())
			conn.Close()
			return nil, err
		}
		f.bus = bus
		f.events = eventlog.NewRedis(conn.Client, conn.Prefix, eventlog.Options{})
		// A replica holds a paused run only between claiming and deleting
		// it; its heartbeat says it is alive meanwhile.
		f.checkpoints = checkpoint.NewRedis(conn.Client, conn.Prefix, reg.Key)
		return f, nil
	}
	path := filepath.Join(data, StateFile)
	// A generous initial map: each remap as the file grows makes bbolt
	// copy every node of a commit (see package eventlog).
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, InitialMmapSize: 64 << 20})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is locked (is a ruleagent server running on --data %s?)", path, data)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.db, f.path = db, path
	reg := health.NewLocal()
	_ = reg.Join(ctx, health.Replica{ID: f.replica})
	f.registry = reg
	f.bus = control.NewLocal(f.replica, 0)
	if f.events, err = eventlog.NewBolt(db, eventlog.Options{}); err != nil {
		db.Close()
		return nil, err
	}
	// A run held by an earlier process (killed between claiming and going
	// on) is free.
	self := f.replica
	alive := func(_ context.Context, replica string) (bool, error) { return replica == self, nil }
	if f.checkpoints, err = checkpoint.NewBolt(db, alive); err != nil {
		_ = f.events.Close()
		db.Close()
		return nil, err
	}
	return f, nil
}

// Close stops the log (writing what is pending), the bus and the
// heartbeat, and closes the stores.
func (f *fleetState) Close() {
	_ = f.events.Close()
	_ = f.bus.Close()
	_ = f.registry.Leave(context.Background())
	if f.db != nil {
		_ = f.db.Close()
	}
	if f.conn != nil {
		_ = f.conn.Close()
	}
}

// where says where the state is kept, for the banner.
func (f *fleetState) where() string {
	if f.conn != nil {
		return "Redis at " + f.conn.Addr + " (replica " + f.replica + ")"
	}
	return "bolt " + f.path
}
