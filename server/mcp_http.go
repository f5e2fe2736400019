package server

import (
	"context"
	"log/slog"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// mcpSessionIdleTTL is how long an MCP session may stay silent before the
// server forgets it: clients that vanish without DELETE would otherwise keep
// their session, and every tools/list_changed would still be sent to it.
const mcpSessionIdleTTL = time.Hour

// mcpShutdownTimeout bounds how long Close waits for MCP sessions to end.
const mcpShutdownTimeout = 5 * time.Second

// MCPHTTP is the store's MCP server over streamable HTTP, to mount at /mcp.
// mcp-go's DNS-rebinding protection stays on: on a loopback listener, a
// request whose Host is not a loopback name gets 403. The transport is made
// once per store, and Close ends its sessions.
//
// The standalone GET event stream is refused (405, which the protocol
// allows). mcp-go v1.2.1 feeds it and every POST's response stream from one
// queue per session, so a call's progress notifications would be split
// between two streams and reach the client out of order, while progress
// must only go up. Without it, a call's notifications travel on the call's
// own response stream, in order. tools/list_changed still reaches every
// client: the one that saved a chain on that call's stream, the others on
// the stream of their next request.
func (s *Store) MCPHTTP() *mcpserver.StreamableHTTPServer {
	s.mcpHTTPMu.Lock()
	defer s.mcpHTTPMu.Unlock()
	if s.mcpHTTP == nil {
		s.mcpHTTP = mcpserver.NewStreamableHTTPServer(s.mcp,
			mcpserver.WithEndpointPath("/mcp"),
			mcpserver.WithDisableStreaming(true),
			mcpserver.WithSessionIdleTTL(mcpSessionIdleTTL),
			// mcp-go logs every refused GET at Info; only problems matter.
			mcpserver.WithStreamableHTTPLogger(slog.New(atLeast{slog.Default().Handler(), slog.LevelWarn})))
	}
	return s.mcpHTTP
}

// CloseMCPSessions ends the MCP sessions served over HTTP, closing their
// open event streams, so that an http.Server's Shutdown does not wait for
// clients that listen forever. The transport keeps serving new requests.
func (s *Store) CloseMCPSessions() {
	if h := s.startedMCPHTTP(); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mcpShutdownTimeout)
		defer cancel()
		h.CloseSessions(ctx)
	}
}

// closeMCPHTTP stops the transport, its session sweeper included.
func (s *Store) closeMCPHTTP() {
	if h := s.startedMCPHTTP(); h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), mcpShutdownTimeout)
		defer cancel()
		_ = h.Shutdown(ctx)
	}
}

// startedMCPHTTP is the transport if MCPHTTP made one, else nil, so that
// none is made just to be closed.
func (s *Store) startedMCPHTTP() *mcpserver.StreamableHTTPServer {
	s.mcpHTTPMu.Lock()
	defer s.mcpHTTPMu.Unlock()
	return s.mcpHTTP
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
