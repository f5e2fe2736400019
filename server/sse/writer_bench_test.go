package sse

import (
	"net/http"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

// discard is a ResponseWriter that flushes to nowhere.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// BenchmarkEvent is one AG-UI event written as an SSE frame: encoded,
// framed, written and flushed (to a writer that discards it).
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
