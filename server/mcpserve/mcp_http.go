package mcpserve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// mcpSessionIdleTTL is how long an MCP session may stay silent before the
// server forgets it: clients that vanish without DELETE would otherwise keep
// their session, and every tools/list_changed would still be sent to it.
const mcpSessionIdleTTL = time.Hour

// mcpShutdownTimeout bounds how long Close waits for MCP sessions to end.
const mcpShutdownTimeout = 5 * time.Second

// Endpoint is the MCP server over streamable HTTP, to mount at /mcp behind
// the server's browser-origin guard (see server.Store.MCPHTTP). Asking for
// it means the tools are served: from then on the service logs why a chain
// is not offered, once per decision.
func (s *Service) Endpoint() http.Handler {
	s.mcpTools.serving()
	h := s.mcpTransport()
	s.mcpHTTPMu.Lock()
	defer s.mcpHTTPMu.Unlock()
	return mcpEndpoint{h: h, calls: s.mcpCalls, tasks: s.mcpTools.tasks}
}

func (s *Service) mcpTransport() *mcpserver.StreamableHTTPServer {
	s.mcpHTTPMu.Lock()
	defer s.mcpHTTPMu.Unlock()
	if s.mcpHTTP == nil {
		s.mcpCalls = newOpenCalls()
		s.mcpHTTP = mcpserver.NewStreamableHTTPServer(s.mcp,
			mcpserver.WithEndpointPath("/mcp"),
			mcpserver.WithDisableStreaming(true),
			mcpserver.WithSessionIdManager(newMCPSessionIDs(mcpSessionIdleTTL)),
			mcpserver.WithSessionIdleTTL(mcpSessionIdleTTL),
			// Our guard decides, for every route alike: mcp-go's own
			// check would answer a rebound Host in plain text, and only
			// on a loopback listener.
			mcpserver.WithDisableLocalhostProtection(true),
			// mcp-go logs every refused GET at Info; only problems matter.
			mcpserver.WithStreamableHTTPLogger(slog.New(atLeast{slog.Default().Handler(), slog.LevelWarn})))
	}
	return s.mcpHTTP
}

// CloseSessions ends the MCP sessions served over HTTP, closing their
// open event streams, and the open listen streams for task notifications
// (each with its result), so that an http.Server's Shutdown does not wait
// for clients that listen forever. The transport keeps serving new
// requests.
func (s *Service) CloseSessions() {
	if s.mcpTools != nil {
		s.mcpTools.tasks.listeners.endAll()
	}
	if h := s.startedMCPHTTP(); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mcpShutdownTimeout)
		defer cancel()
		h.CloseSessions(ctx)
	}
}

// Close stops the transport, its session sweeper included, and
// cancels the runs waiting for a client's input (they would otherwise hold
// the engines' shutdown).
func (s *Service) Close() {
	if s.mcpTools != nil {
		s.mcpTools.waiting.close()
		s.mcpTools.tasks.close()
	}
	if h := s.startedMCPHTTP(); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mcpShutdownTimeout)
		defer cancel()
		_ = h.Shutdown(ctx)
	}
}

// startedMCPHTTP is the transport if MCPHTTP made one, else nil, so that
// none is made just to be closed.
func (s *Service) startedMCPHTTP() *mcpserver.StreamableHTTPServer {
	s.mcpHTTPMu.Lock()
	defer s.mcpHTTPMu.Unlock()
	return s.mcpHTTP
}

// mcpSessionIDs issues the session ids of 2025-11-25 (and older) clients
// and remembers them, so that a request naming a session that was ended
// (DELETE) or forgotten (idle for the TTL, or a restart of the server) is
// answered 404, and the client starts a new session, as the transport
// requires. It forgets ids after the TTL, so it does not grow without
// bound.
type mcpSessionIDs struct {
	ttl time.Duration

	mu        sync.Mutex
	live      map[string]time.Time // id -> last used
	ended     map[string]time.Time // id -> when it was ended
	lastSweep time.Time
}

func newMCPSessionIDs(ttl time.Duration) *mcpSessionIDs {
	return &mcpSessionIDs{ttl: ttl, live: map[string]time.Time{}, ended: map[string]time.Time{}, lastSweep: time.Now()}
}

// Generate implements mcpserver.SessionIdManager.
func (m *mcpSessionIDs) Generate() string {
	id, err := randomID()
	if err != nil {
		panic(err) // crypto/rand does not fail on the platforms Go supports
	}
	id = "mcp-session-" + id
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep()
	m.live[id] = time.Now()
	return id
}

// Validate implements mcpserver.SessionIdManager.
func (m *mcpSessionIDs) Validate(id string) (terminated bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ended[id]; ok {
		return true, nil
	}
	if _, ok := m.live[id]; !ok {
		return false, fmt.Errorf("unknown MCP session %q", id)
	}
	m.live[id] = time.Now()
	return false, nil
}

// Terminate implements mcpserver.SessionIdManager.
func (m *mcpSessionIDs) Terminate(id string) (notAllowed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; ok {
		delete(m.live, id)
		m.ended[id] = time.Now()
	}
	return false, nil
}

// sweep forgets the ids unused for the TTL, at most once per TTL/2. The
// caller holds m.mu.
func (m *mcpSessionIDs) sweep() {
	now := time.Now()
	if now.Sub(m.lastSweep) < m.ttl/2 {
		return
	}
	m.lastSweep = now
	for _, set := range []map[string]time.Time{m.live, m.ended} {
		for id, t := range set {
			if now.Sub(t) > m.ttl {
				delete(set, id)
			}
		}
	}
}

// atLeast is a slog.Handler passing on records of level min and above.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(attrs), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}
