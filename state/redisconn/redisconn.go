// Package redisconn opens the Redis a fleet shares, configured as the
// fleet's packages need it: context deadlines honoured (a lease renewal
// stuck on a frozen Redis must fail by its holder's deadline), short
// socket timeouts, and a key prefix every package puts its keys under.
//
// Start-up waits for Redis (Open with Options.Wait) and says so through
// Options.OnWait instead of exiting, and Persistence tells whether a
// restart of Redis would empty it, so that the server can warn at start.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix prefixes every key (the sessions store's default too).
const DefaultPrefix = "ruleagent:"

// Conn is a connection pool to the fleet's Redis and the prefix of its
// keys.
type Conn struct {
	Client *redis.Client
	// Prefix starts every key ("ruleagent:" unless the URL says
	// ?prefix=NAME:).
	Prefix string
	// Addr is host:port, for banners and logs.
	Addr string
}

// Options configure Open.
type Options struct {
	// Timeout bounds dialing, reads and writes (2 s when 0).
	Timeout time.Duration
	// Wait is how long Open waits for Redis to answer (0: it fails at
	// once if Redis does not answer).
	Wait time.Duration
	// OnWait is called after each failed attempt while Open waits, with
	// the attempt number and its error, so that the server can show that
	// it waits and why.
	OnWait func(attempt int, err error)
}

// Parse reads a Redis URL (redis://[user:pass@]host:port/db, rediss:// for
// TLS, ?prefix=NAME: for the key prefix) into client options and the
// prefix.
func Parse(rawURL string) (*redis.Options, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", fmt.Errorf("redis URL: %w", err)
	}
	prefix := DefaultPrefix
	q := u.Query()
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, "", fmt.Errorf("redis URL: %w", err)
	}
	return opts, prefix, nil
}

// Open connects to the Redis at rawURL and checks that it answers,
// waiting up to o.Wait for it.
func Open(ctx context.Context, rawURL string, o Options) (*Conn, error) {
	opts, prefix, err := Parse(rawURL)
	if err != nil {
		return nil, err
	}
	d := o.Timeout
	if d <= 0 {
		d = 2 * time.Second
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = d, d, d
	opts.ContextTimeoutEnabled = true
	c := &Conn{Client: redis.NewClient(opts), Prefix: prefix, Addr: opts.Addr}
	if err := c.wait(ctx, d, o); err != nil {
		c.Client.Close()
		return nil, fmt.Errorf("redis at %s: %w", opts.Addr, err)
	}
	return c, nil
}

func (c *Conn) wait(ctx context.Context, d time.Duration, o Options) error {
	var deadline time.Time
	if o.Wait > 0 {
		deadline = time.Now().Add(o.Wait)
	}
	pause := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, d)
		err := c.Client.Ping(pctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || deadline.IsZero() || time.Now().Add(pause).After(deadline) {
			return err
		}
		if o.OnWait != nil {
			o.OnWait(attempt, err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// Key returns the prefixed key of parts joined by ':'.
func (c *Conn) Key(parts ...string) string { return c.Prefix + strings.Join(parts, ":") }

// Close closes the pool.
func (c *Conn) Close() error { return c.Client.Close() }

// Persistence is what survives a restart of the Redis server.
type Persistence struct {
	// AOF: the append-only file is on (appendfsync says how often it is
	// synced: always, everysec or no).
	AOF         bool
	AppendFsync string
	// Snapshots: RDB snapshots are configured (save points).
	Snapshots bool
}

// Durable reports whether a restart keeps the data (up to the last sync).
func (p Persistence) Durable() bool { return p.AOF || p.Snapshots }

func (p Persistence) String() string {
	switch {
	case p.AOF:
		return "append-only file (appendfsync " + p.AppendFsync + ")"
	case p.Snapshots:
		return "RDB snapshots only (writes since the last snapshot are lost in a crash)"
	}
	return "none: a restart of Redis empties it"
}

// ErrUnknownPersistence: Redis refused to say (CONFIG is often disabled on
// managed Redis).
var ErrUnknownPersistence = errors.New("redis does not say how it persists (CONFIG GET refused)")

// Persistence asks Redis how it persists its data.
func (c *Conn) Persistence(ctx context.Context) (Persistence, error) {
	cfg, err := c.Client.ConfigGet(ctx, "*").Result()
	if err != nil {
		return Persistence{}, fmt.Errorf("%w: %v", ErrUnknownPersistence, err)
	}
	p := Persistence{AOF: cfg["appendonly"] == "yes", AppendFsync: cfg["appendfsync"],
		Snapshots: strings.TrimSpace(cfg["save"]) != ""}
	return p, nil
}
