package sse

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// discard is a ResponseWriter that flushes to nowhere. As a Server it lets
// the queue grow without bound: a benchmark's loop emits faster than any
// run, and would be dropped whenever the writer goroutine waits for a
// core.
type discard struct{ h http.Header }

func (d *discard) SSELimits() Limits   { return Limits{MaxQueuedBytes: 1 << 40} }
func (d *discard) StreamDropped(error) {}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// BenchmarkEvent is what a run pays per AG-UI event: encoded, framed and
// queued for the stream's writer (which writes and flushes it to a writer
// that discards it, on its own goroutine).
func BenchmarkEvent(b *testing.B) {
	w := Start(&discard{h: http.Header{}}, DefaultHeartbeat, nil)
	defer w.Close()
	e := events.Event{Type: events.TextMessageContent, MessageID: "msg-0123456789", Delta: "Hello, world "}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Event(&e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream is a whole stream per event: encoded, queued, written
// and flushed, Close waiting for the last frame (the writer's batches
// make one flush for the frames queued meanwhile).
func BenchmarkStream(b *testing.B) {
	e := events.Event{Type: events.TextMessageContent, MessageID: "msg-0123456789", Delta: "Hello, world "}
	b.ReportAllocs()
	w := Start(&discard{h: http.Header{}}, DefaultHeartbeat, nil)
	for range b.N {
		if err := w.Event(&e); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
}

// unbounded lets a benchmark's stream queue without bound (see discard).
type unbounded struct{ http.ResponseWriter }

func (u unbounded) Unwrap() http.ResponseWriter { return u.ResponseWriter }
func (unbounded) SSELimits() Limits             { return Limits{MaxQueuedBytes: 1 << 40} }
func (unbounded) StreamDropped(error)           {}

// BenchmarkStreamTCP is a stream per event over a real loopback
// connection, read to the end by a client: encode, queue, write, flush
// (one write call per batch), the client's reading, until the stream's
// end.
func BenchmarkStreamTCP(b *testing.B) {
	e := events.Event{Type: events.TextMessageContent, MessageID: "msg-0123456789", Delta: "Hello, world "}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := Start(unbounded{rw}, DefaultHeartbeat, nil)
		defer w.Close()
		for range b.N {
			if err := w.Event(&e); err != nil {
				b.Error(err)
				return
			}
		}
	}))
	defer srv.Close()
	b.ReportAllocs()
	resp, err := http.Get(srv.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		b.Fatal(err)
	}
}
