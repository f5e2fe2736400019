package events

import (
	"context"
	"io"
	"sync"
)

// Sink receives a run's events in order. Emit must not block for long: it
// runs on the path of every streamed chunk. Events are passed by value so
// that emitting does not allocate; a Sink that keeps one keeps its own copy.
type Sink interface {
	Emit(Event)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Event)

// Emit implements Sink.
func (f SinkFunc) Emit(e Event) { f(e) }

// Discard is a Sink that drops everything.
var Discard Sink = SinkFunc(func(Event) {})

type sinkKey struct{}

// WithSink returns ctx carrying s. Callers that run a chain (the server, the
// CLI) put their Sink in the message context; the ai/agent node streams the
// run's events into it.
func WithSink(ctx context.Context, s Sink) context.Context {
	return context.WithValue(ctx, sinkKey{}, s)
}

// SinkFrom returns the Sink in ctx, or nil.
func SinkFrom(ctx context.Context) Sink {
	s, _ := ctx.Value(sinkKey{}).(Sink)
	return s
}

// Tee sends every event to each sink in turn.
func Tee(sinks ...Sink) Sink {
	return SinkFunc(func(e Event) {
		for _, s := range sinks {
			s.Emit(e)
		}
	})
}

// Recorder is a Sink that keeps every event. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit implements Sink.
func (r *Recorder) Emit(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns a copy of the events received so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// JSON returns each event encoded as JSON.
func (r *Recorder) JSON() [][]byte {
	evs := r.Events()
	out := make([][]byte, len(evs))
	for i := range evs {
		out[i] = evs[i].AppendJSON(nil)
	}
	return out
}

// Types returns the event types received so far, in order.
func (r *Recorder) Types() []Type {
	evs := r.Events()
	out := make([]Type, len(evs))
	for i := range evs {
		out[i] = evs[i].Type
	}
	return out
}

// JSONLines is a Sink writing one JSON object per line to w. Write errors
// are kept and reported by Err; events after an error are dropped.
type JSONLines struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	err error
}

// NewJSONLines returns a JSON-lines Sink on w.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: w} }

// Emit implements Sink.
func (j *JSONLines) Emit(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return
	}
	j.buf = append(e.AppendJSON(j.buf[:0]), '\n')
	_, j.err = j.w.Write(j.buf)
}

// Err returns the first write error.
func (j *JSONLines) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.err
}
