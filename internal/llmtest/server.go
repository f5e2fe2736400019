package llmtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// completionsPath is where the server answers; Server.URL ends in /v1 so that
// clients configured with it as their base URL append "/chat/completions".
const completionsPath = "/v1/chat/completions"

// Server is an httptest server speaking the OpenAI chat-completions API at
// POST {URL}/chat/completions, streaming (SSE, "stream": true) and not.
type Server struct {
	// URL is the base URL for an OpenAI client, http://127.0.0.1:PORT/v1.
	URL string

	script Script
	http   *httptest.Server
	// closing is closed when Close starts, so hanging and delayed handlers
	// return instead of making httptest's Close wait for them forever.
	closing   chan struct{}
	closeOnce sync.Once

	mu       sync.Mutex
	requests []*Request

	completionSeq atomic.Int64
	callSeq       atomic.Int64
}

// NewServer starts a server on 127.0.0.1 that answers with s, and closes it
// when the test ends.
func NewServer(t testing.TB, s Script) *Server {
	t.Helper()
	srv, err := Start(s)
	if err != nil {
		t.Fatalf("llmtest.NewServer: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Start starts a server outside a test (benchmarks, load drivers); the
// caller closes it.
func Start(s Script) (*Server, error) {
	if s == nil {
		return nil, fmt.Errorf("nil Script")
	}
	// Listen explicitly on IPv4 loopback: httptest would fall back to [::1],
	// and some tests assert the exact host.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &Server{script: s, closing: make(chan struct{})}
	srv.http = httptest.NewUnstartedServer(http.HandlerFunc(srv.serveHTTP))
	_ = srv.http.Listener.Close()
	srv.http.Listener = ln
	srv.http.Start()
	srv.URL = srv.http.URL + "/v1"
	return srv, nil
}

// Close shuts the server down, ending hanging and streaming answers first. It
// is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.http.Close()
	})
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Aborted returns the requests whose client went away before the answer
// was complete.
func (s *Server) Aborted() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if r.Aborted() {
			out = append(out, r)
		}
	}
	return out
}

// LastRequest returns the most recent request, or nil before the first.
func (s *Server) LastRequest() *Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return nil
	}
	return s.requests[len(s.requests)-1]
}

func (s *Server) record(req *Request) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(r.Body)
	req := &Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	// Every request is recorded, refused ones included, so a test can see
	// exactly what its client sent.
	var parseErr *badRequest
	if readErr == nil && r.Method == http.MethodPost && r.URL.Path == completionsPath {
		parseErr = parseBody(req)
	}
	s.record(req)

	switch {
	case readErr != nil:
		writeError(w, http.StatusBadRequest, "llmtest: reading the request body: "+readErr.Error(), "")
		return
	case r.URL.Path != completionsPath:
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: no route for %s %s; the server answers POST %s", r.Method, r.URL.Path, completionsPath), "")
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("llmtest: method %s not allowed; %s takes POST", r.Method, completionsPath), "")
		return
	case parseErr != nil:
		writeError(w, http.StatusBadRequest, parseErr.message, parseErr.param)
		return
	}

	a := s.resolve(req, s.script.Respond(req))
	defer func() {
		// The request's context ends early only when the client went away
		// (or the server is closing): the answer did not reach it whole.
		if r.Context().Err() != nil {
			req.aborted.Store(true)
		}
	}()
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	switch {
	case a.Hang:
		s.hang(r.Context())
	case a.isError():
		writeError(w, a.Status, a.ErrorMessage, "")
	case req.Stream:
		s.writeStream(w, r, &a, req.IncludeUsage)
	default:
		s.writeCompletion(w, r, &a)
	}
}

// hang blocks until the client goes away or the server closes. When the
// server closes, the connection is aborted so the client sees a failure
// rather than an empty 200.
func (s *Server) hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.closing:
		panic(http.ErrAbortHandler)
	}
}

// sleep waits d, and reports false when the client went away or the server
// closed first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closing:
		return false
	}
}

// ServeProcess runs s as the scripted LLM of a process of its own (the
// load drivers of make bench): it prints the server's URL on out, then
// serves until in closes.
func ServeProcess(s Script, in io.Reader, out io.Writer) error {
	srv, err := Start(s)
	if err != nil {
		return err
	}
	defer srv.Close()
	if _, err := fmt.Fprintln(out, srv.URL); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, in)
	return nil
}
