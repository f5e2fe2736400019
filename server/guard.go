package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The browser-origin defence refuses, on every route, what a web page the
// server's user visits could make their browser send: a request to a name
// that was rebound to this server (DNS rebinding), a state change from
// another origin, and a body a page can post without a CORS preflight.
// Each refusal wraps one of these errors.
var (
	// ErrHostNotAllowed: the Host header names neither localhost, an IP
	// address nor a name given with --allowed-hosts (Options.AllowedHosts).
	ErrHostNotAllowed = errors.New("host not allowed")
	// ErrCrossOrigin: a state change (POST, PUT, PATCH, DELETE) or a
	// WebSocket came from a page of another origin that --cors-origin
	// (Options.CORSOrigins) does not admit.
	ErrCrossOrigin = errors.New("cross-origin request refused")
	// ErrNotJSON: a POST, PUT or PATCH body is not declared as JSON.
	ErrNotJSON = errors.New("the body must be JSON")
)

// guard decides which requests a browser could not have been tricked into
// sending. Non-browser callers (curl, SDKs, servers) send no Origin and
// pass, as long as they name an allowed host and send JSON.
type guard struct {
	// hosts are the names admitted besides localhost and IP addresses,
	// lower case; "*.example.com" admits the sub-domains of example.com.
	hosts   []string
	anyHost bool
	// cors admits the origins given with --cors-origin.
	cors func(origin string) bool
}

func newGuard(allowedHosts []string, cors func(string) bool) guard {
	g := guard{cors: cors}
	for _, h := range allowedHosts {
		h = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		switch {
		case h == "*":
			g.anyHost = true
		case h != "":
			g.hosts = append(g.hosts, h)
		}
	}
	if g.cors == nil {
		g.cors = func(string) bool { return false }
	}
	return g
}

// wrap refuses what check refuses, in the error shape of the API the path
// belongs to.
func (g guard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := g.check(r); err != nil {
			refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// check returns nil for a request the server may answer, else an error
// wrapping ErrHostNotAllowed, ErrCrossOrigin or ErrNotJSON.
func (g guard) check(r *http.Request) error {
	if err := g.checkHost(r.Host); err != nil {
		return err
	}
	if changesState(r) || isWebSocket(r) {
		if err := g.checkOrigin(r); err != nil {
			return err
		}
	}
	if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
		return checkJSONBody(r)
	}
	return nil
}

// checkHost admits localhost and its sub-domains (browsers resolve them
// to the loopback interface themselves, so no DNS answer can point them
// elsewhere), IP addresses (a rebinding needs a name), and the allowed
// names. A request without a Host (HTTP/1.0) is no browser's.
func (g guard) checkHost(hostport string) error {
	if g.anyHost || hostport == "" {
		return nil
	}
	host := hostOnly(hostport)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	for _, h := range g.hosts {
		if h == host || strings.HasPrefix(h, "*.") && strings.HasSuffix(host, h[1:]) {
			return nil
		}
	}
	return fmt.Errorf("%w: Host %q is not one this server answers to (DNS-rebinding protection): it answers "+
		"localhost, IP addresses and the names given with --allowed-hosts", ErrHostNotAllowed, host)
}

// checkOrigin admits a request from the page's own origin (the Origin's
// host and port are the request's Host), from an origin admitted with
// --cors-origin, or from no browser page at all (no Origin, no
// cross-site fetch metadata).
func (g guard) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	site := r.Header.Get("Sec-Fetch-Site")
	if origin == "" {
		if site == "cross-site" || site == "same-site" {
			return fmt.Errorf("%w: %s %s from a page of another site (Sec-Fetch-Site: %s) without an Origin",
				ErrCrossOrigin, r.Method, r.URL.Path, site)
		}
		return nil
	}
	if g.cors(origin) {
		return nil
	}
	if site != "cross-site" && sameOrigin(origin, r.Host) {
		return nil
	}
	what := fmt.Sprintf("%q", origin)
	if origin == "null" {
		what = `an opaque origin ("null": a sandboxed frame, a file or a data: URL)`
	}
	verb := r.Method + " " + r.URL.Path
	if isWebSocket(r) {
		verb = "a WebSocket"
	}
	return fmt.Errorf("%w: %s from %s; this server takes state changes and WebSockets only from its own origin "+
		"or an origin given with --cors-origin", ErrCrossOrigin, verb, what)
}

// sameOrigin reports whether origin (scheme://host[:port]) names the host
// and port of the request's Host header. A Host without a port is taken
// to be on the origin scheme's default port (a reverse proxy in front).
func sameOrigin(origin, hostport string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.Opaque != "" || u.Path != "" && u.Path != "/" {
		return false
	}
	var def string
	switch strings.ToLower(u.Scheme) {
	case "http":
		def = "80"
	case "https":
		def = "443"
	default:
		return false
	}
	oport := u.Port()
	if oport == "" {
		oport = def
	}
	_, hport, err := net.SplitHostPort(hostport)
	if err != nil {
		hport = def
	}
	return strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), hostOnly(hostport)) && oport == hport
}

// checkJSONBody admits a JSON body (application/json, or
// application/<anything>+json, with any parameters) and a POST with no body
// at all: a page can send text/plain, form and multipart bodies, and a
// typeless one, without a CORS preflight.
func checkJSONBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json") {
		return nil
	}
	got := "none"
	if ct != "" {
		got = fmt.Sprintf("%q", ct)
	}
	return fmt.Errorf("%w: %s %s takes a JSON body: send Content-Type: application/json (got %s)", ErrNotJSON, r.Method, r.URL.Path, got)
}

// refuse answers a refused request: 403 for a host or origin, 415 for a
// body type, in the error shape of the path's API (OpenAI's for /v1,
// JSON-RPC for /mcp, {"error"} elsewhere).
func refuse(w http.ResponseWriter, r *http.Request, err error) {
	status, code := http.StatusForbidden, "origin_not_allowed"
	switch {
	case errors.Is(err, ErrHostNotAllowed):
		code = "host_not_allowed"
	case errors.Is(err, ErrNotJSON):
		status, code = http.StatusUnsupportedMediaType, "unsupported_media_type"
		w.Header().Set("Accept-Post", "application/json")
	}
	switch {
	case isOpenAIPath(r.URL.Path):
		writeOpenAIError(w, status, err.Error(), "invalid_request_error", code)
	case r.URL.Path == "/mcp":
		// MCP: a refused Origin is 403, its body a JSON-RPC error without
		// an id.
		writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": map[string]any{"code": -32000, "message": err.Error()}})
	default:
		writeError(w, status, err.Error())
	}
}

// changesState reports whether r's method may change something.
func changesState(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// isWebSocket reports whether r asks for a WebSocket upgrade.
func isWebSocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// hostOnly is the lower-case host name of a Host header, without port,
// brackets or trailing dot.
func hostOnly(hostport string) string {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
