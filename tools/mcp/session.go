package mcptool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/telemetry"
)

// The client speaks the newest protocol revision both sides support. It
// asks server/discover first: a server of the stateless 2026-07-28 revision
// answers, and every request then carries its version and capabilities; any
// other server is taken through the initialize handshake of 2025-11-25 (or
// the older revision it asks for). tools/list_changed arrives on a
// subscriptions/listen stream (2026-07-28), on the HTTP GET stream or on
// stdout (older revisions).
//
// legacyVersion is what the handshake asks for.
const legacyVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION

// maxDiscoverWait bounds the server/discover probe: a server older than
// 2026-07-28 answers it with an error at once, but one that ignores unknown
// methods would hold it until this runs out.
const maxDiscoverWait = 3 * time.Second

// session is one connection to the server: a started, initialised client,
// the tools it listed, and for stdio the server's process.
type session struct {
	client *client.Client
	proc   *process // stdio only
	// via names the transport, for messages: in process, stdio,
	// streamable HTTP or SSE.
	via string
	// version is the protocol revision in use; modern reports 2026-07-28
	// or later (stateless: no session to lose, no ping).
	version string
	modern  bool
	listed  []mcp.Tool
	// schemas keeps the listed input schemas as the server sent them.
	schemas *listedSchemas
	// broken is set when a call saw the transport fail: the next call
	// reconnects.
	broken atomic.Bool
	// suspect is set when a call timed out: the next call pings first.
	suspect   atomic.Bool
	end       context.CancelFunc
	closeOnce sync.Once
}

// usable reports whether calls may still go to this session.
func (s *session) usable() bool {
	return !s.broken.Load() && (s.proc == nil || s.proc.alive())
}

// close ends the session; for stdio it stops the server's processes.
func (s *session) close() {
	s.closeOnce.Do(func() {
		if s.proc != nil {
			s.proc.stop(s.client.Close)
		} else {
			_ = s.client.Close()
		}
		s.end()
	})
}

// dialer opens sessions to one server.
type dialer struct {
	t      *target
	self   *server.MCPServer
	http   *http.Client
	log    *slog.Logger // handed to the transports, demoted to debug
	notify func(mcp.JSONRPCNotification)
	// elicit answers the server's questions (see input.go).
	elicit elicitation
	// sse records that auto detection found a legacy SSE server, and
	// legacy a streamable HTTP server without server/discover (see
	// probeModern), so that reconnections go straight to what works.
	sse, legacy atomic.Bool
}

// dial opens a session. ctx bounds the attempt; life is the session's
// lifetime, which long-lived streams (SSE, the HTTP GET stream, the
// subscriptions/listen stream) run under.
func (d *dialer) dial(ctx, life context.Context) (*session, error) {
	switch d.t.kind {
	case kindSelf:
		schemas := &listedSchemas{}
		cl := client.NewClient(newSelfTransport(d.self, d.elicit, schemas), d.options(false)...)
		return d.start(ctx, life, &session{client: cl, via: "in process", schemas: schemas})
	case kindStdio:
		tr, proc, err := newStdioTransport(d.t, transport.WithCommandLogger(d.log))
		if err != nil {
			return nil, err
		}
		schemas := &listedSchemas{}
		return d.start(ctx, life, &session{client: client.NewClient(keepingStdio{tr, schemas}, d.options(false)...), proc: proc, via: "stdio", schemas: schemas})
	}
	if d.t.transport == transportSSE || d.sse.Load() {
		return d.dialSSE(ctx, life)
	}
	legacy, known := d.legacy.Load(), true
	if !legacy {
		modern, k, err := d.probeModern(ctx)
		if err != nil {
			return nil, err
		}
		legacy, known = !modern, k
		d.legacy.Store(legacy)
	}
	s, err := d.dialStreamable(ctx, life, legacy, known)
	switch {
	case err == nil && !known && !s.modern:
		// The probe had no answer in time, and the client's own discovery
		// then found a server on the handshake: connect again with the GET
		// stream that carries its tools/list_changed.
		s.close()
		d.legacy.Store(true)
		return d.dialStreamable(ctx, life, true, true)
	case err == nil || !errors.Is(err, transport.ErrLegacySSEServer):
		return s, err
	case d.t.transport == transportStreamable:
		return nil, misconfigured{fmt.Errorf(`the server refused the streamable HTTP initialize request, so it may only speak the legacy SSE transport (set transport to "auto" or "sse"): %w`, err)}
	}
	// The MCP spec's backwards-compatibility rule: a server that answers
	// the initialize POST with a 4xx status speaks the legacy HTTP+SSE
	// transport, whose event stream is a GET of the same URL.
	if s, err = d.dialSSE(ctx, life); err == nil {
		d.sse.Store(true)
	}
	return s, err
}

// dialStreamable connects over streamable HTTP: server/discover first, or
// (legacy) straight to the handshake with the GET stream open. known
// reports that the probe found the server modern: the client's own
// discovery may then take the whole connect time, since a slow answer is
// no sign of an older server.
func (d *dialer) dialStreamable(ctx, life context.Context, legacy, known bool) (*session, error) {
	opts := []transport.StreamableHTTPCOption{
		transport.WithHTTPHeaders(d.t.headers),
		transport.WithHTTPHeaderFunc(telemetry.Headers),
		transport.WithHTTPBasicClient(d.http),
		transport.WithHTTPLogger(d.log),
	}
	if legacy {
		// The GET stream carries notifications/tools/list_changed before
		// 2026-07-28; it is deprecated only for the newer revision.
		//lint:ignore SA1019 the legacy revision's own stream
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(d.t.url, opts...)
	if err != nil {
		return nil, err
	}
	copts := d.options(legacy)
	if !legacy && known {
		copts = append(copts, client.WithDiscoverTimeout(-1))
	}
	schemas := &listedSchemas{}
	return d.start(ctx, life, &session{client: client.NewClient(keepingHTTP{tr, schemas}, copts...), via: "streamable HTTP", schemas: schemas})
}

// options are the client's options: the handler of the server's questions
// (which declares the elicitation capability), and either the newest
// revision with a bounded discovery probe, or the handshake only.
func (d *dialer) options(legacy bool) []client.ClientOption {
	opts := []client.ClientOption{client.WithElicitationHandler(d.elicit)}
	if legacy {
		return append(opts, client.WithProtocolVersion(legacyVersion))
	}
	return append(opts, client.WithDiscoverTimeout(min(d.t.connectTimeout/2, maxDiscoverWait)))
}

func (d *dialer) dialSSE(ctx, life context.Context) (*session, error) {
	tr, err := transport.NewSSE(d.t.url,
		transport.WithHeaders(d.t.headers),
		transport.WithHeaderFunc(telemetry.Headers),
		transport.WithHTTPClient(d.http),
		transport.WithEndpointTimeout(d.t.connectTimeout),
		transport.WithSSELogger(d.log))
	if err != nil {
		return nil, err
	}
	schemas := &listedSchemas{}
	return d.start(ctx, life, &session{client: client.NewClient(keepingSSE{tr, schemas}, d.options(true)...), via: "SSE", schemas: schemas})
}

// start starts a session's client (for stdio, its process), shakes hands
// and lists the tools. On error the session is closed, and a stdio error
// quotes the server's stderr.
func (d *dialer) start(ctx, life context.Context, s *session) (*session, error) {
	s.end = func() {}
	s.client.OnNotification(d.notify)
	err := s.client.Start(life)
	if s.proc != nil {
		s.proc.started(err)
	}
	if err == nil {
		err = d.handshake(ctx, s)
	}
	if err != nil {
		s.close()
		if s.proc != nil {
			err = fmt.Errorf("%w%s", err, s.proc.describeStderr())
		}
		return nil, err
	}
	return s, nil
}

// handshake initialises a started client (server/discover, or the
// initialize handshake) and lists the server's tools.
func (d *dialer) handshake(ctx context.Context, s *session) error {
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "ruleagent", Version: clientVersion()}
	if _, err := s.client.Initialize(ctx, req); err != nil {
		return err
	}
	s.version = s.client.ProtocolVersion()
	s.modern = mcp.IsModernProtocol(s.version)
	listed, err := s.listTools(ctx)
	if err != nil {
		return fmt.Errorf("listing the tools: %w", err)
	}
	s.listed = listed
	return nil
}

// listTools lists the server's tools (every page), with their input
// schemas as the server wrote them.
func (s *session) listTools(ctx context.Context) ([]mcp.Tool, error) {
	listed, err := s.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return s.schemas.asListed(listed.Tools), nil
}

// clientVersion is the version the client reports to servers.
var clientVersion = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "dev"
})

// demoted hands the transports' own log records to the process's handler at
// debug level. The transports log their internal retries, such as the HTTP
// GET stream failing every second while a server is down; the client itself
// logs what matters (lost connections, reconnections) at the right level.
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(a []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(a)} }
func (d demoted) WithGroup(n string) slog.Handler      { return demoted{d.h.WithGroup(n)} }
