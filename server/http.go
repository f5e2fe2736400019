package server

import (
	"crypto/subtle"
	"net"
	"net/http"
	"strings"

	"github.com/ruleagent/ruleagent/metrics"
)

// Options configure the HTTP server.
type Options struct {
	// Store holds the deployed chains.
	Store *Store
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every route but /healthz.
	Token string
}

// Handler returns the HTTP API.
func Handler(o Options) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.Handle("GET /metrics", metrics.Handler())
	for pattern, h := range o.extraRoutes() {
		mux.Handle(pattern, h)
	}
	return o.auth(mux)
}

// auth enforces the bearer token, when one is set.
func (o Options) auth(next http.Handler) http.Handler {
	if o.Token == "" {
		return next
	}
	want := []byte("Bearer " + o.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			next.ServeHTTP(w, r)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ruleagent"`)
			http.Error(w, `{"error":"missing or wrong bearer token"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
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
