package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/state/health"
)

// Redis is the bus of a fleet. Each replica subscribes to
// PREFIX control:REPLICA; requests and replies are JSON envelopes.
type Redis struct {
	rdb     redis.UniversalClient
	prefix  string
	self    string
	o       RedisOptions
	link    *health.Link
	ps      *redis.PubSub
	stop    chan struct{}
	loopWG  sync.WaitGroup
	handWG  sync.WaitGroup
	mu      sync.Mutex
	handler Handler
	pending map[string]chan Reply
	closed  bool
}

// RedisOptions configure a Redis bus.
type RedisOptions struct {
	// Timeout is how long a sender waits for a reply (DefaultTimeout when
	// 0), and a handler's context.
	Timeout time.Duration
	// Ping is how often an idle subscription checks its connection (1 s
	// when 0): a frozen Redis shows within two pings.
	Ping time.Duration
	// Alive, when set, tells a dead replica before anything is published
	// (health.Registry.Alive).
	Alive func(ctx context.Context, replica string) (bool, error)
}

// envelope is what travels on the channels.
type envelope struct {
	ID    string   `json:"id"`
	From  string   `json:"from"`
	Req   *Message `json:"req,omitempty"`
	Reply *Reply   `json:"reply,omitempty"`
}

// NewRedis subscribes replica self to its channel on rdb (which must
// honour context deadlines, as redisconn.Open sets it) and returns its bus.
// It does not own rdb.
func NewRedis(ctx context.Context, rdb redis.UniversalClient, prefix, self string, o RedisOptions) (*Redis, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Ping <= 0 {
		o.Ping = time.Second
	}
	b := &Redis{rdb: rdb, prefix: prefix, self: self, o: o, link: health.NewLink("control subscription"),
		stop: make(chan struct{}), pending: map[string]chan Reply{}}
	b.ps = rdb.Subscribe(ctx, b.channel(self))
	// The first confirmation: the replica is reachable when NewRedis returns.
	if _, err := b.ps.ReceiveTimeout(ctx, o.Timeout); err != nil {
		b.ps.Close()
		return nil, fmt.Errorf("control: subscribing: %w", err)
	}
	b.link.Up()
	b.loopWG.Go(b.loop)
	return b, nil
}

func (b *Redis) channel(replica string) string { return b.prefix + "control:" + replica }

// Handle implements Bus.
func (b *Redis) Handle(h Handler) {
	b.mu.Lock()
	b.handler = h
	b.mu.Unlock()
}

// Probe implements Bus.
func (b *Redis) Probe() health.Probe { return b.link }

func newID() string {
	var x [8]byte
	_, _ = rand.Read(x[:])
	return hex.EncodeToString(x[:])
}

// Send implements Bus.
func (b *Redis) Send(ctx context.Context, to string, m Message) (Reply, error) {
	if b.o.Alive != nil {
		if ok, err := b.o.Alive(ctx, to); err == nil && !ok {
			return Reply{}, fmt.Errorf("%w: %s has no heartbeat", ErrUnreachable, to)
		}
	}
	id := newID()
	ch := make(chan Reply, 1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return Reply{}, ErrClosed
	}
	b.pending[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	msg, err := json.Marshal(envelope{ID: id, From: b.self, Req: &m})
	if err != nil {
		return Reply{}, err
	}
	wait, cancel := context.WithTimeout(ctx, b.o.Timeout)
	defer cancel()
	n, err := b.rdb.Publish(wait, b.channel(to), msg).Result()
	switch {
	case err != nil && ctx.Err() == nil:
		return Reply{}, fmt.Errorf("%w: %v", ErrNoAnswer, err)
	case err != nil:
		return Reply{}, ctx.Err()
	case n == 0:
		return Reply{}, fmt.Errorf("%w: nothing listens for %s", ErrUnreachable, to)
	}
	select {
	case r := <-ch:
		return r, nil
	case <-wait.Done():
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		return Reply{}, fmt.Errorf("%w: %s, within %s", ErrNoAnswer, to, b.o.Timeout)
	}
}

// loop receives until Close: requests go to the handler, replies to their
// senders. An idle connection is pinged; no answer to a ping within the
// next interval marks the link down until something arrives again.
func (b *Redis) loop() {
	pinged := false
	for {
		select {
		case <-b.stop:
			return
		default:
		}
		msg, err := b.ps.ReceiveTimeout(context.Background(), b.o.Ping)
		if err != nil {
			var ne net.Error
			switch {
			case errors.Is(err, redis.ErrClosed):
				return
			case errors.As(err, &ne) && ne.Timeout():
				if pinged {
					b.link.Down(errors.New("no answer to a ping: redis is frozen or unreachable"))
				}
				pctx, cancel := context.WithTimeout(context.Background(), b.o.Ping)
				perr := b.ps.Ping(pctx)
				cancel()
				pinged = true
				if perr != nil {
					b.link.Down(perr)
				}
			default:
				b.link.Down(err)
				select {
				case <-b.stop:
					return
				case <-time.After(b.o.Ping / 4):
				}
			}
			continue
		}
		pinged = false
		b.link.Up()
		if m, ok := msg.(*redis.Message); ok {
			b.receive(m.Payload)
		}
	}
}

func (b *Redis) receive(payload string) {
	var e envelope
	if json.Unmarshal([]byte(payload), &e) != nil {
		return
	}
	if e.Reply != nil {
		b.mu.Lock()
		ch := b.pending[e.ID]
		b.mu.Unlock()
		if ch != nil {
			select {
			case ch <- *e.Reply:
			default:
			}
		}
		return
	}
	if e.Req == nil {
		return
	}
	b.mu.Lock()
	h, closed := b.handler, b.closed
	if !closed {
		b.handWG.Add(1)
	}
	b.mu.Unlock()
	if closed {
		return
	}
	go func() {
		defer b.handWG.Done()
		ctx, cancel := context.WithTimeout(context.Background(), b.o.Timeout)
		defer cancel()
		r := noHandler
		if h != nil {
			r = h(ctx, *e.Req)
		}
		out, err := json.Marshal(envelope{ID: e.ID, From: b.self, Reply: &r})
		if err == nil {
			b.rdb.Publish(ctx, b.channel(e.From), out)
		}
	}()
}

// Close implements Bus.
func (b *Redis) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	err := b.ps.Close()
	b.loopWG.Wait()
	b.handWG.Wait()
	return err
}
