package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/internal/wait"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
)

// Reconnection backoff: after the n-th failed attempt in a row, no attempt
// is made for min(firstRetryDelay·2^(n-1), maxRetryDelay). A call during
// that time waits for the attempt when it is at most firstRetryDelay away
// (a server restarting is back within a second or two), and otherwise
// fails at once, saying when the next attempt will be: a dead server never
// holds a call for longer than that pause and one connect timeout.
const (
	firstRetryDelay = time.Second
	maxRetryDelay   = time.Minute
	// pingTimeout bounds the liveness check after a call timed out.
	pingTimeout = 5 * time.Second
)

// conn is the one MCP client shared by every tool of a tools-array entry.
// It is safe for concurrent use. It connects when the agent's tool set is
// built (or, when the server is down then, in the background: startup.go),
// reconnects on the call after the connection is lost (with backoff between
// failed attempts), and follows the server's tool list.
type conn struct {
	name   string // the prefix, naming the server in messages
	t      *target
	dialer *dialer
	log    *slog.Logger
	tools  *toolList
	// base is the lifetime of every session; Close cancels it.
	base     context.Context
	cancel   context.CancelFunc
	ownHTTP  *http.Client // closed with the conn when it made it
	relistCh chan struct{}
	progress progressCalls
	calls    inflight

	mu       sync.Mutex
	live     *session
	dialing  chan struct{} // closed when the attempt in progress ends
	failures int           // failed attempts in a row
	retryAt  time.Time
	lastErr  error
	closed   bool
	wg       sync.WaitGroup // the relister and sessions being closed
}

// session returns a usable session, reconnecting if the last one was lost
// and the backoff allows. Concurrent callers share one attempt.
func (c *conn) session(ctx context.Context) (*session, error) {
	paused := false
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, tools.Errorf(tools.ErrExecutionFailed, "MCP server %s: the agent's tools were closed", c.name)
		}
		if s := c.live; s != nil && s.usable() {
			c.mu.Unlock()
			if s.suspect.Load() && !c.healthy(ctx, s, "a call timed out") {
				continue
			}
			return s, nil
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, tools.Wrap(tools.ErrTimeout, ctx.Err(), "waiting for MCP server %s to reconnect", c.name)
			}
		}
		if s := c.live; s != nil {
			c.dropLocked(s, lostReason(s))
		}
		if delay := time.Until(c.retryAt); delay > 0 {
			err := c.lastErr
			c.mu.Unlock()
			if !paused && delay <= firstRetryDelay {
				paused = true
				if pauseErr := wait.For(ctx, delay); pauseErr != nil {
					return nil, tools.Wrap(tools.ErrTimeout, pauseErr, "waiting for MCP server %s to reconnect", c.name)
				}
				continue
			}
			return nil, tools.Wrap(tools.ErrExecutionFailed, err, "MCP server %s (%s) is unavailable; the next attempt to reconnect is in %s", c.name, c.t.describe(), delay.Round(100*time.Millisecond))
		}
		ch := make(chan struct{})
		c.dialing = ch
		// Close waits for the attempt, and closes what it opened.
		c.wg.Add(1)
		c.mu.Unlock()

		s, err := c.connect(ctx)

		c.mu.Lock()
		c.dialing = nil
		close(ch)
		c.wg.Done()
		switch {
		case err == nil && c.closed:
			c.mu.Unlock()
			s.close()
			continue
		case err != nil:
			c.failures++
			c.retryAt = time.Now().Add(retryDelay(c.failures))
			c.lastErr = err
			c.mu.Unlock()
			c.log.Warn("MCP server: reconnection failed", "server", c.name, "attempt", c.failures, "err", err)
			return nil, tools.Wrap(tools.ErrExecutionFailed, err, "cannot reconnect to MCP server %s (%s)", c.name, c.t.describe())
		}
		c.live, c.failures, c.retryAt, c.lastErr = s, 0, time.Time{}, nil
		c.mu.Unlock()
		c.log.Info("MCP server: reconnected", "server", c.name, "via", s.via)
		_ = c.tools.update(s.listed) // connectLater retries a set not built yet
		return s, nil
	}
}

// retryDelay is the pause after the n-th failed attempt in a row.
func retryDelay(n int) time.Duration {
	return min(firstRetryDelay<<min(n-1, 10), maxRetryDelay)
}

// lostReason says why a session that is no longer usable was lost.
func lostReason(s *session) error {
	if s.proc != nil && !s.proc.alive() {
		return fmt.Errorf("the server process exited%s", s.proc.describeStderr())
	}
	return nil
}

// connect opens a session within the connect timeout (and ctx, and the
// conn's lifetime: Close ends an attempt in progress).
func (c *conn) connect(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, c.t.connectTimeout)
	defer cancel()
	defer context.AfterFunc(c.base, cancel)()
	life, end := context.WithCancel(c.base)
	// An attempt that runs out of time must not leave streams behind.
	stop := context.AfterFunc(ctx, end)
	s, err := c.dialer.dial(ctx, life)
	if !stop() && err == nil {
		s.close()
		s, err = nil, ctx.Err()
	}
	if err != nil {
		end()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no connection within %s: %w", c.t.connectTimeout, err)
		}
		return nil, err
	}
	s.end = end
	c.listen(s, life)
	return s, nil
}

// healthy pings a session that gave reason to doubt it (why). A session the
// server no longer answers is dropped, and the caller reconnects. A server
// without ping (method not found) is answering, so it counts as healthy.
func (c *conn) healthy(ctx context.Context, s *session, why string) bool {
	ctx, cancel := context.WithTimeout(ctx, min(pingTimeout, c.t.connectTimeout))
	defer cancel()
	//lint:ignore SA1019 a legacy-era session is pinged; on a 2026-07-28 one Ping is a no-op and the next call tells
	if err := s.client.Ping(ctx); err != nil && !errors.Is(err, mcp.ErrMethodNotFound) {
		c.drop(s, fmt.Errorf("%s, and a ping failed too: %w", why, err))
		return false
	}
	s.suspect.Store(false)
	return true
}

// drop retires a session whose connection was lost. It is closed in the
// background, so that the call that noticed is not held up by it.
func (c *conn) drop(s *session, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(s, err)
}

func (c *conn) dropLocked(s *session, err error) {
	s.broken.Store(true)
	if c.live != s {
		return
	}
	c.live = nil
	if err != nil {
		c.log.Warn("MCP server: connection lost", "server", c.name, "via", s.via, "err", err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		s.close()
	}()
}

// call runs one tool call on the server.
func (c *conn) call(ctx context.Context, remote string, args json.RawMessage) (tools.Result, error) {
	s, err := c.session(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	res, err := c.callOn(ctx, s, remote, args)
	if err != nil && c.sessionRejected(ctx, s, err) {
		// The server no longer knows the session (it restarted while we
		// were idle) and refused the call before running it: reconnect
		// and send it once more.
		if s, err = c.session(ctx); err != nil {
			return tools.Result{}, err
		}
		res, err = c.callOn(ctx, s, remote, args)
	}
	if err != nil {
		return tools.Result{}, c.callError(ctx, s, remote, err)
	}
	return toResult(res), nil
}

func (c *conn) callOn(ctx context.Context, s *session, remote string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.t.timeout)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = remote
	req.Params.Arguments = args
	token, progress := c.progress.start(ctx, c.name, remote)
	// The call's trace context travels in _meta (2026-07-28), and over
	// HTTP in the traceparent header too (telemetry.Headers).
	req.Params.Meta = &mcp.Meta{ProgressToken: token, AdditionalFields: telemetry.InjectMeta(ctx, nil)}
	done := c.calls.add(ctx)
	res, err := s.client.CallTool(ctx, req)
	done()
	c.progress.end(token, progress, err != nil || res.IsError)
	if err == nil {
		return res, nil
	}
	if ctx.Err() == nil && lostConnection(err) {
		c.drop(s, err)
	}
	return nil, err
}

// sessionRejected reports whether a call failed because the server refuses
// the session itself, which it checks before running anything. Over HTTP
// the spec's sign is a 404; servers built on the TypeScript SDK's example
// (server-everything among them) answer an unknown session with a 400 and a
// JSON-RPC error instead, so a call that the server answered with an error
// is followed by a ping on the same session: a server that refuses even
// that has dropped the session. Either way the session is dropped. (Over
// stdio and in process the session is the connection: nothing to check.)
func (c *conn) sessionRejected(ctx context.Context, s *session, err error) bool {
	if errors.Is(err, transport.ErrSessionTerminated) {
		return true
	}
	if ctx.Err() != nil || lostConnection(err) || errors.Is(err, mcp.ErrInvalidParams) || c.t.kind != kindHTTP || s.modern {
		return false
	}
	return !c.healthy(ctx, s, "the server answered a call with an error")
}

// lostConnection reports whether err means the transport failed, as opposed
// to the server answering with an error.
func lostConnection(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed)
}

// callError turns a failed call into the error the model reads.
func (c *conn) callError(ctx context.Context, s *session, remote string, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		// The server may just be slow, or hung: check before the next
		// call.
		s.suspect.Store(true)
	}
	switch {
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return tools.Wrap(tools.ErrTimeout, err, "%s on MCP server %s did not answer within %s", remote, c.name, c.t.timeout)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return tools.Wrap(tools.ErrTimeout, ctx.Err(), "%s on MCP server %s did not answer in time", remote, c.name)
	case ctx.Err() != nil:
		return tools.Wrap(tools.ErrExecutionFailed, ctx.Err(), "%s on MCP server %s was cancelled", remote, c.name)
	case lostConnection(err):
		detail := ""
		if s.proc != nil {
			detail = s.proc.describeStderr()
		}
		return tools.Wrap(tools.ErrExecutionFailed, err, "the connection to MCP server %s (%s, %s) was lost during the call%s; it will be re-established on the next call", c.name, c.t.describe(), s.via, detail)
	case errors.Is(err, mcp.ErrInvalidParams):
		return tools.Wrap(tools.ErrInvalidArgs, err, "MCP server %s refused the arguments of %s", c.name, remote)
	}
	if na, ok := notAsked(err); ok {
		// The seam governance will fill: until then the model learns what
		// the tool wanted to ask.
		return tools.Wrap(tools.ErrExecutionFailed, na, "%s on MCP server %s stopped for input", remote, c.name)
	}
	return tools.Wrap(tools.ErrExecutionFailed, err, "MCP server %s could not run %s", c.name, remote)
}

// onNotification is the notification handler: tools/list_changed asks the
// relister to list the tools again; progress goes to the call it is about.
// It must not block: stdio transports call it from the loop that reads the
// server's answers.
func (c *conn) onNotification(n mcp.JSONRPCNotification) {
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged),
		// A listen stream just opened: the tools may have changed since
		// they were listed.
		string(mcp.MethodNotificationSubscriptionsAcknowledged):
		c.relistSoon()
	case string(mcp.MethodNotificationProgress):
		c.progress.notify(n)
	}
}

// relistSoon asks the relister to list the tools again.
func (c *conn) relistSoon() {
	select {
	case c.relistCh <- struct{}{}:
	default: // a relisting is already due
	}
}

// relist lists the tools again on every notifications/tools/list_changed,
// until Close. A notification while no session is up needs nothing: the
// next connection lists the tools anyway.
func (c *conn) relist() {
	defer c.wg.Done()
	for {
		select {
		case <-c.base.Done():
			return
		case <-c.relistCh:
		}
		c.mu.Lock()
		s := c.live
		c.mu.Unlock()
		if s == nil || !s.usable() {
			continue
		}
		ctx, cancel := context.WithTimeout(c.base, c.t.timeout)
		listed, err := s.listTools(ctx)
		cancel()
		if err != nil {
			if c.base.Err() != nil || !s.usable() {
				continue // closed or dropped meanwhile
			}
			if lostConnection(err) {
				c.drop(s, err)
			}
			c.log.Warn("MCP server: listing the changed tools failed", "server", c.name, "err", err)
			continue
		}
		_ = c.tools.update(listed) // a refusal is logged
	}
}

// Close closes the session and stops a stdio server's processes. It waits
// for everything the conn started, and is safe to call more than once.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	s := c.live
	c.live = nil
	c.mu.Unlock()
	// Ends the relister, an attempt to connect in progress, and the
	// streams of every session.
	c.cancel()
	if s != nil {
		s.close()
	}
	c.wg.Wait()
	if c.ownHTTP != nil {
		c.ownHTTP.CloseIdleConnections()
	}
	return nil
}
