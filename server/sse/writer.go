// Package sse writes server-sent events the way AG-UI and OpenAI clients
// read them: one `data: <json>\n\n` frame per event (LF only: CRLF framing
// breaks the AG-UI client), flushed as soon as it is written, with a
// comment line as heartbeat while nothing else is sent, so that proxies do
// not close a stream that waits for a long tool call.
package sse

import (
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

// DefaultHeartbeat is the quiet time after which a heartbeat is sent.
const DefaultHeartbeat = 15 * time.Second

// Writer writes one SSE stream. It is safe for concurrent use; the first
// write error is kept and every later write returns it.
type Writer struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	rc    *http.ResponseController
	err   error
	last  time.Time
	every time.Duration
	// beat fires after every of silence: one timer per stream, no
	// goroutine waiting on a ticker.
	beat *time.Timer
	once sync.Once
}

// frames are pooled: a stream holds no buffer between its events.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// ErrClosed is returned by writes after Close.
var ErrClosed = errors.New("sse: stream closed")

// Start answers the request with 200 and an event stream, and sends a
// heartbeat after every heartbeat of silence (0 disables them) until Close.
// extra headers are set before the status is written.
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
	s := &Writer{w: w, rc: http.NewResponseController(w), last: time.Now(), every: heartbeat}
	_ = s.rc.Flush()
	metrics.ActiveStreams.WithLabelValues("sse").Inc()
	if heartbeat > 0 {
		s.mu.Lock()
		s.beat = time.AfterFunc(heartbeat, s.heartbeat)
		s.mu.Unlock()
	}
	return s
}

// Event writes an AG-UI event as one frame.
func (s *Writer) Event(e *events.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	bp := frames.Get().(*[]byte)
	b := append((*bp)[:0], "data: "...)
	b = e.AppendJSON(b)
	b = append(b, '\n', '\n')
	err := s.writeLocked(b)
	putFrame(bp, b)
	return err
}

// Data writes one frame whose data is b (a single line of JSON, or
// OpenAI's [DONE]).
func (s *Writer) Data(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	bp := frames.Get().(*[]byte)
	f := append((*bp)[:0], "data: "...)
	f = append(f, b...)
	f = append(f, '\n', '\n')
	err := s.writeLocked(f)
	putFrame(bp, f)
	return err
}

// Emit implements events.Sink; a write error is kept (see Err).
func (s *Writer) Emit(e events.Event) { _ = s.Event(&e) }

// Err returns the first write error.
func (s *Writer) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Writer) writeLocked(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		s.err = err
		return err
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
		return err
	}
	s.last = time.Now()
	return nil
}

// putFrame returns a frame buffer to the pool, unless an event made it
// large.
func putFrame(bp *[]byte, b []byte) {
	if cap(b) <= 16<<10 {
		*bp = b
		frames.Put(bp)
	}
}

// heartbeat sends a comment line once the stream has been quiet for every,
// and sets the timer again for the next possible one.
func (s *Writer) heartbeat() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return
	}
	quiet := time.Since(s.last)
	if quiet >= s.every {
		if s.writeLocked([]byte(": ping\n\n")) != nil {
			return
		}
		quiet = 0
	}
	s.beat.Reset(s.every - quiet)
}

// Close stops the heartbeat; later writes fail with ErrClosed.
func (s *Writer) Close() {
	s.once.Do(func() {
		s.mu.Lock()
		if s.beat != nil {
			s.beat.Stop()
		}
		if s.err == nil {
			s.err = ErrClosed
		}
		s.mu.Unlock()
		metrics.ActiveStreams.WithLabelValues("sse").Dec()
	})
}
