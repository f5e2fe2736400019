package server

import (
	"bufio"
	"context"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/live"
	"github.com/ruleagent/ruleagent/server/sse"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/health"
)

// Options configure the HTTP server.
type Options struct {
	// Store holds the deployed chains.
	Store *Store
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but the probes (/healthz, /readyz) and the editor's page (GET / and
	// /index.html, which hold no secret and ask for the token). Browsers
	// cannot set headers on a WebSocket: GET /api/v1/ws also takes it as
	// the subprotocol "bearer.<base64url(token)>" next to "ruleagent"
	// (and, deprecated, as ?token=).
	Token string
	// CORSOrigins are the browser origins allowed to call the API from
	// another origin ("*" for any but the opaque "null", which only "null"
	// admits). None by default: CORS is off.
	CORSOrigins []string
	// AllowedHosts are the names the server answers to besides localhost
	// (and its sub-domains) and IP addresses: requests naming another
	// Host get 403, so that a page whose name was rebound to this server
	// cannot use it (DNS rebinding). "*.example.com" admits the
	// sub-domains of example.com; "*" admits any name.
	AllowedHosts []string
	// StreamLimits bound a stream whose client stops reading: it is
	// dropped (and its run cancelled, as when a client goes away) after
	// WriteTimeout without progress (MCP answers too), or once it is
	// MaxQueuedBytes behind (SSE); sse's defaults for zero fields. A run
	// never waits for its client.
	StreamLimits sse.Limits
	// DiscoverTimeout bounds POST /api/v1/tools/mcp/discover: how long a
	// server gets to start and list its tools; DefaultDiscoverTimeout when
	// zero.
	DiscoverTimeout time.Duration
	// MaxBodyBytes bounds request bodies; DefaultMaxBody when zero.
	MaxBodyBytes int64
	// Heartbeat is the quiet time after which an event stream gets a
	// comment line; sse.DefaultHeartbeat when zero.
	Heartbeat time.Duration
	// HideToolActivity turns off, by default for every request, the
	// readable tool activity in /v1/chat/completions answers (a request
	// may still ask for it).
	HideToolActivity bool
	// RetryWindow is how long /v1/chat/completions takes a request like
	// one before (same body, same caller) for a retry, answered from the
	// first attempt: DefaultRetryWindow when zero, never when negative
	// (an Idempotency-Key still counts).
	RetryWindow time.Duration
	// Logger receives one line per request and what goes wrong; slog's
	// default when nil.
	Logger *slog.Logger
	// Health adds fields to /healthz (for example the sandbox state).
	Health func() map[string]any
	// Readiness, when set, is this replica's health (package
	// state/health): /readyz answers its Ready report, /healthz shows its
	// checks. Without it /readyz is ok until the store drains.
	Readiness *health.Model
	// Identity, when set, verifies who each caller is (per-user API keys,
	// JWTs, a trusted proxy's header): see identify. A request with Token
	// is the operator's.
	Identity *identity.Verifier
	// Keys, when set, is where API keys are kept: the operator manages
	// them over /api/v1/keys (ruleagent keys --server).
	Keys sessions.KeyStore
}

// DefaultMaxBody is the default request body limit: a chain, or a long
// conversation with images, fits.
const DefaultMaxBody = 16 << 20

func (o *Options) defaults() {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBody
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = sse.DefaultHeartbeat
	}
	if o.DiscoverTimeout <= 0 {
		o.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Handler returns the HTTP API.
func Handler(o Options) http.Handler {
	o.defaults()
	mux := http.NewServeMux()
	for pattern, h := range o.routes() {
		mux.Handle(pattern, h)
	}
	// The guard comes before the token: a rebound page is told why it is
	// refused even without one. CORS headers come first, so that a front
	// end admitted with --cors-origin can read a refusal.
	return o.logRequests(o.cors(o.guard().wrap(o.auth(o.identify(o.limitBody(routeOf(mux)))))))
}

// guard is the browser-origin defence of every route (guard.go).
func (o Options) guard() guard {
	return newGuard(o.AllowedHosts, func(origin string) bool { return len(o.CORSOrigins) > 0 && o.originAllowed(origin) })
}

// auth enforces the bearer token, when one is set: a request with it is
// the operator's. Without it, a server that verifies identities lets
// identify decide.
func (o Options) auth(next http.Handler) http.Handler {
	if o.Token == "" {
		return next
	}
	check := tokenCheck(o.Token, o.Logger)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isProbe(r) || r.Method == http.MethodOptions || isEditorPage(r) {
			next.ServeHTTP(w, r)
			return
		}
		ok := check(r)
		if !ok && o.Identity != nil {
			next.ServeHTTP(w, r)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ruleagent"`)
			if isOpenAIPath(r.URL.Path) {
				writeOpenAIError(w, http.StatusUnauthorized, "missing or wrong bearer token", "invalid_request_error", "invalid_api_key")
				return
			}
			writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), identity.Principal{Method: identity.MethodToken})))
	})
}

// tokenCheck returns the check of a request's bearer token: the
// Authorization header, or for the WebSocket what wsCredential finds (a
// token in the deprecated ?token= is logged once).
func tokenCheck(token string, logger *slog.Logger) func(*http.Request) bool {
	want := []byte("Bearer " + token)
	wantRaw := []byte(token)
	var warnQuery sync.Once
	return func(r *http.Request) bool {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) == 1 {
			return true
		}
		cred, inURL := wsCredential(r)
		if cred == "" || subtle.ConstantTimeCompare([]byte(cred), wantRaw) != 1 {
			return false
		}
		if inURL {
			warnQuery.Do(func() {
				logger.Warn("a WebSocket client sent the token in its URL (?token=), which is deprecated and will be refused in a " +
					"later release: send it as the subprotocol bearer.<base64url(token)> next to ruleagent")
			})
		}
		return true
	}
}

// wsCredential is the credential a WebSocket handshake (GET /api/v1/ws)
// carries, since a browser sets no headers on one: the subprotocol
// "bearer.<base64url(credential)>", or the deprecated ?token= (inURL).
// Other requests carry none here.
func wsCredential(r *http.Request) (cred string, inURL bool) {
	if r.URL.Path != "/api/v1/ws" {
		return "", false
	}
	if t, ok := live.BearerSubprotocol(r); ok {
		return string(t), false
	}
	q := r.URL.Query().Get("token")
	return q, q != ""
}

// isProbe reports whether r is a health probe (/healthz, /readyz): load
// balancers and orchestrators call them without credentials, and they
// hold no secret.
func isProbe(r *http.Request) bool { return r.URL.Path == "/healthz" || r.URL.Path == "/readyz" }

// isEditorPage reports whether r asks for the editor's page (see
// editor.Handler): it holds no secret, and asks for the token (or the
// caller's credential) itself.
func isEditorPage(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && (r.URL.Path == "/" || r.URL.Path == "/index.html")
}

// cors answers cross-origin requests from the configured origins only.
func (o Options) cors(next http.Handler) http.Handler {
	if len(o.CORSOrigins) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && o.originAllowed(origin) {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Add("Vary", "Origin")
			h.Set("Access-Control-Expose-Headers", "X-Run-Id, X-Thread-Id, Mcp-Session-Id")
			if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
				h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, traceparent, tracestate")
				h.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether a browser page from origin may call the API:
// an origin given with --cors-origin, or any with "*" but the opaque
// origin "null" (a sandboxed iframe, a file:// page, a data: URL), which
// every page can take on and so names no one: only naming it admits it.
func (o Options) originAllowed(origin string) bool {
	return origin != "null" && slices.Contains(o.CORSOrigins, "*") || slices.ContainsFunc(o.CORSOrigins, func(a string) bool {
		return strings.EqualFold(strings.TrimSuffix(a, "/"), origin)
	})
}

// limitBody refuses bodies larger than MaxBodyBytes (413 once read past).
func (o Options) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > o.MaxBodyBytes {
			writeError(w, http.StatusRequestEntityTooLarge, "the request body is larger than the server's limit")
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, o.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// logRequests logs each request once it is answered, with the run it
// started (X-Run-Id), at debug level for the noisy health and metrics
// probes; with tracing on, the request is an HTTP server span
// (startServerSpan).
func (o Options) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// A stream that drops its client cancels the request, so that
		// the handler's run ends as when the client goes away.
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(nil)
		sw := &statusWriter{ResponseWriter: w, limits: o.StreamLimits, drop: cancel}
		ctx, span := startServerSpan(ctx, r)
		next.ServeHTTP(sw, r.WithContext(ctx))
		span.end(sw.status())
		level := slog.LevelInfo
		if isProbe(r) || r.URL.Path == "/metrics" {
			level = slog.LevelDebug
		}
		attrs := []slog.Attr{slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", sw.status()), slog.Duration("duration", time.Since(start))}
		if id := w.Header().Get("X-Run-Id"); id != "" {
			attrs = append(attrs, slog.String("run", id))
		}
		o.Logger.LogAttrs(r.Context(), level, "http", attrs...)
	})
}

// statusWriter remembers the status a handler wrote; it is the SSE
// writers' sse.Server: it carries the server's stream limits, and cancels
// the request when a stream drops its client.
type statusWriter struct {
	http.ResponseWriter
	code   int
	limits sse.Limits
	drop   context.CancelCauseFunc
}

// SSELimits implements sse.Server.
func (w *statusWriter) SSELimits() sse.Limits { return w.limits }

// StreamDropped implements sse.Server.
func (w *statusWriter) StreamDropped(err error) {
	if w.drop != nil {
		w.drop(err)
	}
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) status() int {
	if w.code == 0 {
		return http.StatusOK
	}
	return w.code
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush implements http.Flusher, for handlers that assert it (mcp-go).
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Hijack implements http.Hijacker, for the WebSocket upgrade.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.code == 0 {
		w.code = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// IsLoopback reports whether addr (host:port) binds only the loopback
// interface. An empty host binds every interface.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
