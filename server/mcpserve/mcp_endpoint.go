package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
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
//
// The endpoint also writes a call's progress on the call's own response
// stream (slotWriter is the request's requestStream), and drops the
// response to a request of a session whose client cancelled it (calls).
type mcpEndpoint struct {
	h     *mcpserver.StreamableHTTPServer
	calls *openCalls
	// tasks answers the methods of the tasks extension (mcp_tasks_http.go).
	tasks *mcpTasks
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
	var head rpcHead
	_ = json.Unmarshal(body, &head)
	if e.tasks != nil && e.tasks.serveHTTP(w, r, body, head.ID) {
		return
	}
	slot := &errSlot{}
	sw := &slotWriter{ResponseWriter: w, slot: slot, id: head.ID, rc: http.NewResponseController(w),
		writeTimeout: sse.LimitsOf(w).WriteTimeout}
	// Cancellation is by session: a 2026-07-28 client, which has none,
	// cancels by closing the request's stream.
	if session := r.Header.Get("Mcp-Session-Id"); session != "" {
		if id, ok := head.isCancel(); ok {
			e.calls.cancel(session + " " + id)
		} else if id := jsonrpcID(head.ID); id != "" && head.Method != "" {
			key := session + " " + id
			sw.cancelled = e.calls.add(key)
			defer e.calls.done(key, sw.cancelled)
		}
	}
	ctx := context.WithValue(context.WithValue(r.Context(), errSlotKey{}, slot), requestStreamKey{}, sw)
	e.h.ServeHTTP(sw, r.WithContext(ctx))
}

// errSlot carries a tool's protocol error from the handler to the
// endpoint.
type errSlot struct {
	mu  sync.Mutex
	err *ProtocolError
	// result replaces the library's result (a task's CreateTaskResult).
	result json.RawMessage
}

type errSlotKey struct{}

func (s *errSlot) set(err *ProtocolError) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *errSlot) setResult(raw json.RawMessage) {
	s.mu.Lock()
	s.result = raw
	s.mu.Unlock()
}

func (s *errSlot) getResult() json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.result
}

func (s *errSlot) get() *ProtocolError {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// slotWriter passes mcp-go's response through, unless the slot holds an
// error when the response starts: then it answers with that error instead.
// It is the request's requestStream: notify opens the response as an event
// stream, and mcp-go's JSON answer then follows as the stream's last event.
// The answer to a request its client cancelled is dropped. Each write has
// a deadline (the server's stream write timeout): a client that stops
// reading an answer or its progress stream is dropped rather than holding
// the request forever.
type slotWriter struct {
	http.ResponseWriter
	slot         *errSlot
	id           json.RawMessage
	cancelled    *atomic.Bool // nil: not cancellable
	rc           *http.ResponseController
	writeTimeout time.Duration

	mu       sync.Mutex // orders notify with mcp-go's writes
	started  bool
	replaced bool
	// sse is set when notify opened the response as an event stream.
	sse bool
}

// deadline gives the next write the stream write timeout. The caller
// holds w.mu.
func (w *slotWriter) deadline() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.writeTimeout))
}

// sseEvent is how an event stream carries one JSON-RPC message.
const sseEventPrefix = "event: message\ndata: "

// begin decides, at the response's first byte, whether it is replaced.
// The caller holds w.mu.
func (w *slotWriter) begin() {
	if w.started {
		return
	}
	w.started = true
	perr, result := w.slot.get(), w.slot.getResult()
	if perr == nil && result == nil {
		return
	}
	w.replaced = true
	w.deadline()
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	if perr != nil {
		w.ResponseWriter.WriteHeader(http.StatusBadRequest)
		_, _ = w.ResponseWriter.Write(perr.response(w.id))
		return
	}
	w.ResponseWriter.WriteHeader(http.StatusOK)
	_, _ = w.ResponseWriter.Write(resultResponse(w.id, result))
}

// resultResponse is the JSON-RPC answer, with its newline, to request id
// with result.
func resultResponse(id, result json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	return append(body, '\n')
}

// openStream starts the response as an event stream. The caller holds
// w.mu.
func (w *slotWriter) openStream() {
	w.started, w.sse = true, true
	h := w.ResponseWriter.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.ResponseWriter.WriteHeader(http.StatusOK)
}

func (w *slotWriter) isCancelled() bool { return w.cancelled != nil && w.cancelled.Load() }

// notify implements requestStream.
func (w *slotWriter) notify(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.replaced || w.isCancelled() {
		return
	}
	if !w.started {
		w.openStream()
	}
	w.deadline()
	if _, err := io.WriteString(w.ResponseWriter, sseEventPrefix); err == nil {
		_, _ = w.ResponseWriter.Write(append(msg, "\n\n"...))
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// response is the JSON-RPC answer, with its newline, to request id that
// failed with e.
func (e *ProtocolError) response(id json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": e.Code, "message": e.Message, "data": e.Data}})
	return append(body, '\n')
}

func (w *slotWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return // the stream notify opened, or the replacement, is under way
	}
	if w.isCancelled() {
		// The answer will be dropped: an empty event stream ends the
		// request.
		w.openStream()
		return
	}
	w.begin()
	if !w.replaced {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *slotWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started && w.isCancelled() {
		w.openStream()
	}
	w.begin()
	if w.replaced {
		return len(b), nil
	}
	msg, event := bytes.CutPrefix(b, []byte(sseEventPrefix))
	if w.isCancelled() && responseID(msg) == jsonrpcID(w.id) {
		return len(b), nil
	}
	w.deadline()
	if w.sse && !event && w.ResponseWriter.Header().Get("Content-Type") == "application/json" {
		// mcp-go answers in JSON on a stream notify opened: the answer
		// becomes the stream's last event.
		if _, err := io.WriteString(w.ResponseWriter, sseEventPrefix); err != nil {
			return 0, err
		}
		if _, err := w.ResponseWriter.Write(append(bytes.TrimRight(b, "\n"), "\n\n"...)); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps the response streamable (mcp-go sends progress as SSE).
func (w *slotWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.begin()
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.replaced {
		w.deadline()
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *slotWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
