package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/server"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/chainsync"
	"github.com/ruleagent/ruleagent/state/health"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// fleet is what a replica of a fleet (serve --session-store redis://...)
// shares with the others: the Redis connection, the chain store, and its
// own health.
type fleet struct {
	replica string
	conn    *redisconn.Conn
	chains  *chainsync.Redis
	model   *health.Model
	// persistence is how Redis keeps its data (for the banner); persistErr
	// when Redis does not say.
	persistence redisconn.Persistence
	persistErr  error
	// shareChains: the replica's chains are the fleet's chain store's
	// (not with --read-only, whose chains are its folder's).
	shareChains bool
}

// isRedisSpec reports whether --session-store names a Redis.
func isRedisSpec(spec string) bool {
	return strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://")
}

// openFleet connects to the fleet's Redis, waiting for it (wait 0: until
// it answers or ctx ends) with a status line on w at each failed
// attempt, rather than exiting: replicas may start before their Redis.
// It then asks Redis how it persists, and warns when a restart of Redis
// would empty it.
func openFleet(ctx context.Context, spec string, wait time.Duration, w io.Writer, logger *slog.Logger) (*fleet, error) {
	if wait <= 0 {
		wait = 100 * 365 * 24 * time.Hour
	}
	// go-redis's own messages (a failed dial each second while Redis is
	// down) become structured log records, repeats counted.
	redisconn.LogTo(logger)
	var last time.Time
	conn, err := redisconn.Open(ctx, spec, redisconn.Options{Timeout: 5 * time.Second, Wait: wait,
		OnWait: func(attempt int, err error) {
			if attempt == 1 || time.Since(last) >= 5*time.Second {
				last = time.Now()
				fmt.Fprintf(w, "waiting for Redis (attempt %d): %v\n", attempt, err) // the replica is not listening yet
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("--session-store: %w", err)
	}
	f := &fleet{replica: health.NewReplicaID(), conn: conn, chains: chainsync.NewRedis(conn.Client, conn.Prefix)}
	f.model = health.NewModel(f.replica)
	f.model.Add(redisProbe(conn), true)
	f.persistence, f.persistErr = conn.Persistence(ctx)
	switch {
	case errors.Is(f.persistErr, redisconn.ErrUnknownPersistence):
		logger.Warn("Redis does not say how it persists its data (CONFIG GET refused): make sure it does, or a restart of Redis loses the fleet's sessions and chains", "redis", conn.Addr)
	case f.persistErr != nil:
		logger.Warn("could not ask Redis how it persists its data", "redis", conn.Addr, "err", f.persistErr)
	case !f.persistence.Durable():
		logger.Warn("Redis runs without persistence (no save points, appendonly no): a restart of Redis empties the fleet's sessions, run state and chains (replicas put back the chains they run); turn on appendonly yes",
			"redis", conn.Addr)
	}
	return f, nil
}

// sessions is the session store on the fleet's connection.
func (f *fleet) sessions() sessions.Store {
	return sessions.NewRedis(f.conn, sessions.RedisOptions{Owner: f.replica})
}

// seed adds the chains of the folder that the fleet's store has never
// had (no chain and no tombstone of that id): the first replica of a
// fleet brings its folder, the others' folders bring nothing back that
// the fleet deleted or changed since.
func (f *fleet) seed(ctx context.Context, dir string, logger *slog.Logger) error {
	src, err := chainsync.OpenFolder(dir, false)
	if err != nil {
		return err
	}
	defer src.Close()
	added, err := chainsync.Seed(ctx, f.chains, src, f.replica)
	if err != nil {
		return fmt.Errorf("seeding the fleet's chain store from %s: %w", dir, err)
	}
	if len(added) > 0 {
		logger.Info("chains of the folder added to the fleet's chain store", "chains", added)
	}
	return nil
}

// watchStore adds the store's chain sync to the replica's health: ready
// once caught up and while following; chains that this replica refused
// are reported, without making it unready.
func (f *fleet) watchStore(store *server.Store) {
	sync, chains := store.ChainProbes()
	f.model.Add(sync, true)
	f.model.Add(chains, false)
}

// awaitCaughtUp waits up to d for the replica's first reconciliation
// with the chain store (the banner then lists the fleet's chains).
func awaitCaughtUp(ctx context.Context, store *server.Store, d time.Duration) {
	sync, _ := store.ChainProbes()
	deadline := time.Now().Add(d)
	for !sync.Check(ctx).OK && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

func (f *fleet) close() { f.conn.Close() }

// banner says what the replica shares.
func (f *fleet) banner(w io.Writer) {
	shared := "chains, sessions and leases shared"
	if !f.shareChains {
		shared = "sessions and leases shared; chains from the folder (--read-only)"
	}
	fmt.Fprintf(w, "  fleet: replica %s, Redis %s (%s)\n", f.replica, f.conn.Addr, shared)
	switch {
	case f.persistErr != nil:
		fmt.Fprintln(w, "  Redis persistence: unknown (CONFIG GET refused): check that Redis persists its data")
	case !f.persistence.Durable():
		fmt.Fprintln(w, "  WARNING: Redis persistence: none: a restart of Redis empties sessions and chains (set appendonly yes)")
	default:
		fmt.Fprintf(w, "  Redis persistence: %s\n", f.persistence)
	}
}

// redisProbe is the readiness check of the fleet's Redis: it answers a
// PING within a second.
func redisProbe(conn *redisconn.Conn) health.Probe {
	link := health.NewLink("redis")
	return health.ProbeFunc(func(ctx context.Context) health.Check {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := conn.Client.Ping(ctx).Err(); err != nil {
			link.Down(err)
		} else {
			link.Up()
		}
		return link.Check(ctx)
	})
}
