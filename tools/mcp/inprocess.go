package mcptool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// selfTransport is the in-process transport of a "self" entry. Like
// mcp-go's own, it hands each request to the server's HandleMessage, with
// no encoding on a wire beyond JSON. Unlike it, it delivers everything the
// server queued for the client while handling a request before it returns
// the response: a call's progress reaches the call before its result, as
// it does over stdio and HTTP, instead of racing it.
type selfTransport struct {
	srv     *server.MCPServer
	session *server.InProcessSession
	schemas *listedSchemas

	mu      sync.RWMutex
	handler func(mcp.JSONRPCNotification)

	// flush asks the delivering goroutine to deliver what is queued and
	// close the channel it is given.
	flush     chan chan struct{}
	done      chan struct{}
	startOnce sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// newSelfTransport makes the transport; elicit answers the questions the
// server asks with elicitation/create (a client on 2025-11-25).
func newSelfTransport(srv *server.MCPServer, elicit server.ElicitationHandler, schemas *listedSchemas) *selfTransport {
	return &selfTransport{srv: srv, schemas: schemas, flush: make(chan chan struct{}), done: make(chan struct{}),
		session: server.NewInProcessSessionWithHandlers(srv.GenerateInProcessSessionID(), nil, elicit, nil)}
}

// Start implements transport.Interface: it registers the session, so that
// the server's notifications have somewhere to go, and starts delivering
// them.
func (t *selfTransport) Start(ctx context.Context) error {
	var err error
	t.startOnce.Do(func() {
		if err = t.srv.RegisterSession(ctx, t.session); err != nil {
			return
		}
		t.wg.Add(1)
		go t.deliver()
	})
	return err
}

// deliver is the one reader of the session's notifications.
func (t *selfTransport) deliver() {
	defer t.wg.Done()
	queued := t.session.ClientNotifications()
	for {
		select {
		case <-t.done:
			return
		case n := <-queued:
			t.notify(n)
		case ack := <-t.flush:
			for drained := false; !drained; {
				select {
				case n := <-queued:
					t.notify(n)
				default:
					drained = true
				}
			}
			close(ack)
		}
	}
}

func (t *selfTransport) notify(n mcp.JSONRPCNotification) {
	t.mu.RLock()
	h := t.handler
	t.mu.RUnlock()
	if h != nil {
		h(n)
	}
}

// detached is a context that ends with ctx but carries none of its values:
// a call to "self" from a chain that is itself serving an MCP request must
// not hand that request's transport state (its HTTP headers, its session)
// to the server, which would judge the inner request by them. The values
// it keeps are the calling run's tool-policy restrictions (an agent reached
// through "self" is bound by its caller's policies, as a sub-agent is) and
// the agent runs the call is made within (a chain saved through "self" may
// hold no more power than they), and whom the calling run acts for (the
// server's verified caller: a call through "self" is that caller's, as
// over HTTP).
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	base := tools.WithAgentsOf(context.Background(), ctx)
	if who := tools.OnBehalfOf(ctx); who != nil {
		base = tools.WithOnBehalfOf(base, who)
	}
	if rs := policy.FromContext(ctx); rs != nil {
		base = policy.WithRestrictions(base, rs)
	}
	inner, cancel := context.WithCancelCause(base)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return inner, func() {
		stop()
		cancel(context.Canceled)
	}
}

// SendRequest implements transport.Interface.
func (t *selfTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	ctx, cancel := detached(ctx)
	defer cancel()
	msg := t.srv.HandleMessage(t.srv.WithContext(ctx, t.session), raw)
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encoding the response: %w", err)
	}
	var resp transport.JSONRPCResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	t.schemas.observe(req, &resp, nil)
	ack := make(chan struct{})
	select {
	case t.flush <- ack:
		<-ack
	case <-t.done:
	}
	return &resp, nil
}

// SendNotification implements transport.Interface.
func (t *selfTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	raw, err := json.Marshal(n)
	if err != nil {
		return err
	}
	ctx, cancel := detached(ctx)
	defer cancel()
	t.srv.HandleMessage(t.srv.WithContext(ctx, t.session), raw)
	return nil
}

// SetNotificationHandler implements transport.Interface.
func (t *selfTransport) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.mu.Lock()
	t.handler = h
	t.mu.Unlock()
}

// Close implements transport.Interface: it stops the delivery and
// unregisters the session.
func (t *selfTransport) Close() error {
	t.closeOnce.Do(func() {
		close(t.done)
		t.wg.Wait()
		t.srv.UnregisterSession(context.Background(), t.session.SessionID())
	})
	return nil
}

// GetSessionId implements transport.Interface; there is no wire session.
func (t *selfTransport) GetSessionId() string { return "" }
