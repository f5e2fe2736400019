// Package sse writes server-sent events the way AG-UI and OpenAI clients
// read them: one `data: <json>\n\n` frame per event (LF only: CRLF framing
// breaks the AG-UI client), preceded by `id: N\n` when the event has an id
// in its run's event log, flushed as soon as it is written, with a
// comment line as heartbeat while nothing else is sent, so that proxies do
// not close a stream that waits for a long tool call.
//
// A run never waits for its client: events are queued and one goroutine
// per stream writes them, each write with a deadline. A client that stops
// reading (or a stuck proxy) is dropped when a write makes no progress
// for Limits.WriteTimeout, or at once when it falls Limits.MaxQueuedBytes
// behind: its pending write fails, and the
// server is told (Server.StreamDropped), which cancels the request's
// context, so the handler's run ends as when a client goes away.
package sse

import (
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

// DefaultHeartbeat is the quiet time after which a heartbeat is sent.
const DefaultHeartbeat = 15 * time.Second

// The default Limits.
const (
	DefaultWriteTimeout   = 30 * time.Second
	DefaultMaxQueuedBytes = 4 << 20
)

// Limits bound a stream whose client does not keep up; zero fields take
// the defaults.
type Limits struct {
	// WriteTimeout is the longest a write may make no progress before the
	// client is dropped; it also bounds how long Close waits for the last
	// frames to go out.
	WriteTimeout time.Duration
	// MaxQueuedBytes is how far a client may fall behind before it is
	// dropped: the memory its queued frames hold (at least 512 bytes
	// each). A frame always fits an empty queue, however large.
	MaxQueuedBytes int
}

func (l Limits) withDefaults() Limits {
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.MaxQueuedBytes <= 0 {
		l.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	return l
}

// Server is implemented by a ResponseWriter (or one it wraps, through
// Unwrap) of a server that sets its streams' limits and wants to know
// when one drops its client, without each handler passing them on.
type Server interface {
	SSELimits() Limits
	// StreamDropped is called once, off the stream's lock, when the stream
	// drops its client (err: ErrTooSlow or the failed write's error).
	StreamDropped(err error)
}

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("sse: stream closed")

// ErrTooSlow is returned by writes once the client was dropped for falling
// too far behind.
var ErrTooSlow = errors.New("sse: the client is too slow: the stream was dropped")

// Writer writes one SSE stream. It is safe for concurrent use; the first
// error (a failed write, ErrTooSlow, ErrClosed) is kept and every later
// write returns it.
type Writer struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	every  time.Duration
	limits Limits
	server Server // nil when the ResponseWriter carries none

	mu     sync.Mutex
	err    error
	failed bool      // a write failed or the client was dropped: write no more
	queue  []*[]byte // frames waiting for the writer goroutine
	spare  []*[]byte // the writer's emptied batch, reused as the next queue
	queued int       // memory held by the frames in queue
	// closeBy, once Close was called, is when the last frames must be out.
	closeBy time.Time

	wake chan struct{} // frames are queued, or Close was called
	done chan struct{} // the writer goroutine has ended
	once sync.Once
}

// frames are pooled: a stream holds no buffer between its events, except
// while its client is behind.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Start answers the request with 200 and an event stream, and sends a
// heartbeat after every heartbeat of silence (0 disables them) until Close.
// extra headers are set before the status is written. The stream's limits
// come from w when it carries them (Server), else the defaults. Close must
// be called: it ends the stream's goroutine.
func Start(w http.ResponseWriter, heartbeat time.Duration, extra map[string]string) *Writer {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	// nginx buffers responses unless told otherwise.
	h.Set("X-Accel-Buffering", "no")
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	s := &Writer{w: w, rc: http.NewResponseController(w), every: heartbeat, server: serverOf(w),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if s.server != nil {
		s.limits = s.server.SSELimits()
	}
	s.limits = s.limits.withDefaults()
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.limits.WriteTimeout))
	if err := s.rc.Flush(); err != nil {
		s.err, s.failed = err, true
		s.dropped(err)
	}
	metrics.ActiveStreams.WithLabelValues("sse").Inc()
	go s.write()
	return s
}

// LimitsOf returns the stream limits w carries (Server), with the defaults
// for what it leaves zero: for other streaming responses of the server.
func LimitsOf(w http.ResponseWriter) Limits {
	var l Limits
	if srv := serverOf(w); srv != nil {
		l = srv.SSELimits()
	}
	return l.withDefaults()
}

// serverOf finds the Server w is, or wraps.
func serverOf(w http.ResponseWriter) Server {
	for {
		if srv, ok := w.(Server); ok {
			return srv
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

// dropped tells the server the client was dropped, and counts a client
// dropped for being too slow (not one that went away).
func (s *Writer) dropped(err error) {
	switch {
	case errors.Is(err, ErrTooSlow):
		metrics.StreamClientsDropped.WithLabelValues("sse", "queue_full").Inc()
	case errors.Is(err, os.ErrDeadlineExceeded):
		metrics.StreamClientsDropped.WithLabelValues("sse", "write_timeout").Inc()
	}
	if s.server != nil {
		s.server.StreamDropped(err)
	}
}

// Event queues an AG-UI event as one frame, with its event log id as the
// frame's `id:` when it has one (events.Event.LogID).
func (s *Writer) Event(e *events.Event) error {
	bp := frames.Get().(*[]byte)
	b := appendID((*bp)[:0], e.LogID)
	b = append(b, "data: "...)
	b = e.AppendJSON(b)
	*bp = append(b, '\n', '\n')
	return s.enqueue(bp)
}

// Logged queues an event read from a run's event log: data (its JSON, one
// line) under id.
func (s *Writer) Logged(id uint64, data []byte) error {
	bp := frames.Get().(*[]byte)
	b := appendID((*bp)[:0], id)
	b = append(b, "data: "...)
	b = append(b, data...)
	*bp = append(b, '\n', '\n')
	return s.enqueue(bp)
}

// appendID appends an `id:` line (none for 0).
func appendID(b []byte, id uint64) []byte {
	if id == 0 {
		return b
	}
	b = append(b, "id: "...)
	b = strconv.AppendUint(b, id, 10)
	return append(b, '\n')
}

// Data queues one frame whose data is b (a single line of JSON, or
// OpenAI's [DONE]).
func (s *Writer) Data(b []byte) error {
	bp := frames.Get().(*[]byte)
	f := append((*bp)[:0], "data: "...)
	f = append(f, b...)
	*bp = append(f, '\n', '\n')
	return s.enqueue(bp)
}

// Emit implements events.Sink; a write error is kept (see Err).
func (s *Writer) Emit(e events.Event) { _ = s.Event(&e) }

// Err returns the first error.
func (s *Writer) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// enqueue hands a frame to the writer goroutine, or drops the client when
// it is too far behind. It never waits for the network.
func (s *Writer) enqueue(bp *[]byte) error {
	n := cap(*bp)
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		putFrame(bp)
		return err
	}
	if s.queued > 0 && s.queued+n > s.limits.MaxQueuedBytes {
		first := s.failLocked(ErrTooSlow)
		s.mu.Unlock()
		putFrame(bp)
		if first {
			s.dropped(ErrTooSlow)
		}
		return ErrTooSlow
	}
	s.queue = append(s.queue, bp)
	s.queued += n
	first := len(s.queue) == 1
	s.mu.Unlock()
	if first {
		// The writer takes the whole queue at once: it needs waking for
		// the first frame of each batch only.
		s.signal()
	}
	return nil
}

// failLocked drops the client: its pending write fails at once (the
// deadline is set under s.mu, so that the writer cannot move it later),
// and nothing more is written. It reports whether the client was not
// dropped before, for the caller to tell the server once it released
// s.mu. The caller holds s.mu.
func (s *Writer) failLocked(err error) bool {
	if s.err == nil || s.err == ErrClosed {
		s.err = err
	}
	if s.failed {
		return false
	}
	s.failed = true
	_ = s.rc.SetWriteDeadline(time.Now())
	return true
}

func (s *Writer) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// write is the stream's writer goroutine: it writes the queued frames in
// batches (one flush each), and the heartbeat, until Close.
func (s *Writer) write() {
	defer close(s.done)
	var beats <-chan time.Time
	var beat *time.Timer
	if s.every > 0 {
		beat = time.NewTimer(s.every)
		defer beat.Stop()
		beats = beat.C
	}
	last := time.Now()
	for {
		select {
		case <-s.wake:
		case <-beats:
		}
		s.mu.Lock()
		batch := s.queue
		s.queue, s.spare = s.spare[:0], nil
		s.queued = 0
		failed := s.failed
		ping := s.every > 0 && len(batch) == 0 && time.Since(last) >= s.every
		if !failed && (len(batch) > 0 || ping) {
			deadline := time.Now().Add(s.limits.WriteTimeout)
			if !s.closeBy.IsZero() {
				deadline = s.closeBy
			}
			_ = s.rc.SetWriteDeadline(deadline)
		}
		s.mu.Unlock()

		var err error
		if !failed && (len(batch) > 0 || ping) {
			err = s.writeBatch(batch, ping)
			last = time.Now()
		}
		for i, bp := range batch {
			putFrame(bp)
			batch[i] = nil
		}
		s.mu.Lock()
		first := err != nil && s.failLocked(err)
		s.spare = batch[:0]
		done := !s.closeBy.IsZero() && len(s.queue) == 0
		s.mu.Unlock()
		if first {
			s.dropped(err)
		}
		if done {
			return
		}
		if beat != nil {
			// The next heartbeat is due after every of silence (Go 1.23
			// timers: no stale tick survives Reset).
			beat.Reset(s.every - time.Since(last))
		}
	}
}

// pingFrame is the heartbeat: a comment line.
var pingFrame = []byte(": ping\n\n")

// writeBatch writes the frames, or a heartbeat, and flushes once.
func (s *Writer) writeBatch(batch []*[]byte, ping bool) error {
	if ping {
		if _, err := s.w.Write(pingFrame); err != nil {
			return err
		}
	}
	for _, bp := range batch {
		if _, err := s.w.Write(*bp); err != nil {
			return err
		}
	}
	return s.rc.Flush()
}

// putFrame returns a frame buffer to the pool, unless an event made it
// large.
func putFrame(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		frames.Put(bp)
	}
}

// Close writes the frames still queued (for at most the write timeout),
// stops the heartbeat and returns once the stream's goroutine has ended;
// later writes fail with ErrClosed. A stream whose client was dropped
// leaves its connection's write deadline passed, so net/http closes the
// connection instead of waiting on the client again.
func (s *Writer) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closeBy = time.Now().Add(s.limits.WriteTimeout)
		if s.err == nil {
			s.err = ErrClosed
		}
		s.mu.Unlock()
		s.signal()
		<-s.done
		s.mu.Lock()
		if !s.failed {
			// What net/http writes after the handler (the chunked
			// encoding's end) gets its own write timeout.
			_ = s.rc.SetWriteDeadline(time.Now().Add(s.limits.WriteTimeout))
		}
		s.mu.Unlock()
		metrics.ActiveStreams.WithLabelValues("sse").Dec()
	})
}
