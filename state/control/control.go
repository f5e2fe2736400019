// Package control carries what must reach the replica that owns a run:
// cancel, the answers to its interrupts, a resume. The sender names the
// owner (the run's eventlog.Meta.Owner) and gets one reply for its caller:
// the owner's handler's, or a typed error saying why there is none.
//
//   - ErrUnreachable: the owner is gone (its heartbeat expired, or nothing
//     listens on its channel). The sender learns it at once, without
//     waiting for a timeout, and acts on the run itself: a paused run's
//     checkpoint is claimed and resumed (package checkpoint), a running
//     run of a dead replica is ended in its event log.
//   - ErrNoAnswer: the owner did not reply within the timeout (it may be
//     frozen, or may have acted): the caller answers 504 and says so.
//
// Implementations (contract_test.go runs one table against both):
//
//   - Local: one machine; a message to the process itself calls its
//     handler directly.
//   - Redis: each replica subscribes to its own pub/sub channel; a send
//     is a PUBLISH (whose receiver count tells a missing subscriber at
//     once), the reply comes back on the sender's channel. The subscriber
//     pings through its connection, so a frozen Redis shows as a gap in
//     its Link within two ping intervals; go-redis reconnects and
//     resubscribes, and the Link counts the gap (a replica never silently
//     stops consuming). Messages published while a replica is not
//     subscribed are lost, and their senders get ErrNoAnswer: control is
//     at most once, which is what a cancel or an answer wants (an answer
//     delivered twice would be refused by the checkpoint's claim anyway).
package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/state/health"
)

// Message is a request to a run's owner. Kind is the server's (cancel,
// resume, answer, ...); Body its payload.
type Message struct {
	Kind  string          `json:"kind"`
	RunID string          `json:"runId"`
	Body  json.RawMessage `json:"body,omitempty"`
}

// Reply is the owner's answer: a status the server maps to its HTTP
// answer (200, 404, 409, ...) and a body.
type Reply struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// Handler answers the messages sent to this replica. It runs on a
// goroutine of its own per message, with a context that ends with the
// sender's timeout.
type Handler func(ctx context.Context, m Message) Reply

// Bus carries messages between replicas.
type Bus interface {
	// Handle sets the handler of the messages sent to this replica.
	Handle(h Handler)
	// Send delivers m to replica to and returns its reply.
	Send(ctx context.Context, to string, m Message) (Reply, error)
	// Probe is the subscription's link.
	Probe() health.Probe
	// Close stops receiving and waits for the handlers running.
	Close() error
}

// Errors of buses.
var (
	ErrUnreachable = errors.New("the run's replica is gone")
	ErrNoAnswer    = errors.New("the run's replica did not answer in time")
	ErrClosed      = errors.New("the control bus is closed")
)

// noHandler is the reply of a replica that has no handler yet.
var noHandler = Reply{Status: 503, Body: json.RawMessage(`{"error":"the replica is starting: no control handler yet"}`)}

// DefaultTimeout is how long a sender waits for a reply.
const DefaultTimeout = 5 * time.Second

// Local is the bus of one machine.
type Local struct {
	self string
	link *health.Link

	mu      sync.Mutex
	handler Handler
	closed  bool
	wg      sync.WaitGroup
	timeout time.Duration
}

// NewLocal returns the bus of the replica self; timeout bounds a
// handler's context (DefaultTimeout when 0).
func NewLocal(self string, timeout time.Duration) *Local {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	l := &Local{self: self, link: health.NewLink("control"), timeout: timeout}
	l.link.Up()
	return l
}

// Handle implements Bus.
func (l *Local) Handle(h Handler) {
	l.mu.Lock()
	l.handler = h
	l.mu.Unlock()
}

// Send implements Bus.
func (l *Local) Send(ctx context.Context, to string, m Message) (Reply, error) {
	l.mu.Lock()
	h, closed := l.handler, l.closed
	if !closed && to == l.self && h != nil {
		l.wg.Add(1)
	}
	l.mu.Unlock()
	switch {
	case closed:
		return Reply{}, ErrClosed
	case to != l.self:
		return Reply{}, fmt.Errorf("%w: %s is not this machine's replica", ErrUnreachable, to)
	case h == nil:
		return noHandler, nil
	}
	defer l.wg.Done()
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	done := make(chan Reply, 1)
	go func() { done <- h(hctx, m) }()
	select {
	case r := <-done:
		return r, nil
	case <-hctx.Done():
		return Reply{}, ErrNoAnswer
	case <-ctx.Done():
		return Reply{}, ctx.Err()
	}
}

// Probe implements Bus.
func (l *Local) Probe() health.Probe { return l.link }

// Close implements Bus.
func (l *Local) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}
