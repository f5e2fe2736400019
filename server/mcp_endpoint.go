package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/server/sse"
)

// mcpEndpoint is /mcp: mcp-go's streamable HTTP transport, which answers
// every error of a tool handler with -32603. A chain tool that must answer
// with another code (-32021 when the chain asks a client that cannot show
// questions, -32602 for a requestState that fails its check) records it in
// the request's errSlot, and the endpoint answers with it, with HTTP 400 as
// 2026-07-28 requires, as long as nothing was sent yet. (ServeStdio does
// the same over stdio; in process, the error reaches a Go client as -32603
// with the same message.)
type mcpEndpoint struct {
	h *mcpserver.StreamableHTTPServer
}

// maxMCPBody bounds the body read to learn a request's id; mcp-go applies
// its own limit to what it reads.
const maxMCPBody = 4 << 20

func (e mcpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		e.h.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxMCPBody+1))
	if err != nil || len(body) > maxMCPBody {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &head)
	slot := &errSlot{}
	sw := &slotWriter{ResponseWriter: w, slot: slot, id: head.ID, rc: http.NewResponseController(w),
		writeTimeout: sse.LimitsOf(w).WriteTimeout}
	e.h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), errSlotKey{}, slot)))
}

// errSlot carries a tool's protocol error from the handler to the
// endpoint.
type errSlot struct {
	mu  sync.Mutex
	err *protocolError
}

type errSlotKey struct{}

func (s *errSlot) set(err *protocolError) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *errSlot) get() *protocolError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// slotWriter passes mcp-go's response through, unless the slot holds an
// error when the response starts: then it answers with that error instead.
// Each write has a deadline (the server's stream write timeout): a client
// that stops reading an answer or its progress stream is dropped rather
// than holding the request forever.
type slotWriter struct {
	http.ResponseWriter
	slot         *errSlot
	id           json.RawMessage
	started      bool
	replaced     bool
	rc           *http.ResponseController
	writeTimeout time.Duration
}

// deadline gives the next write the stream write timeout.
func (w *slotWriter) deadline() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.writeTimeout))
}

// begin decides, at the response's first byte, whether it is replaced.
func (w *slotWriter) begin() {
	if w.started {
		return
	}
	w.started = true
	perr := w.slot.get()
	if perr == nil {
		return
	}
	w.replaced = true
	w.deadline()
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(http.StatusBadRequest)
	_, _ = w.ResponseWriter.Write(perr.response(w.id))
}

// response is the JSON-RPC answer, with its newline, to request id that
// failed with e.
func (e *protocolError) response(id json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": e.Code, "message": e.Message, "data": e.Data}})
	return append(body, '\n')
}

func (w *slotWriter) WriteHeader(code int) {
	w.begin()
	if !w.replaced {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *slotWriter) Write(b []byte) (int, error) {
	w.begin()
	if w.replaced {
		return len(b), nil
	}
	w.deadline()
	return w.ResponseWriter.Write(b)
}

// Flush keeps the response streamable (mcp-go sends progress as SSE).
func (w *slotWriter) Flush() {
	w.begin()
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.replaced {
		w.deadline()
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *slotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
