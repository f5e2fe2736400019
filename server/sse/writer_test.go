package sse

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

// conn is a ResponseWriter over a fake connection: it records what is
// flushed, or, stalled, blocks every write until its write deadline, as a
// socket whose reader stopped reading does. As a Server it has the limits
// given and records the drops it is told.
type conn struct {
	limits Limits

	mu       sync.Mutex
	h        http.Header
	stalled  bool
	deadline time.Time
	changed  chan struct{} // closed and replaced when the deadline moves
	out      bytes.Buffer
	drops    []error
}

func newConn(l Limits, stalled bool) *conn {
	return &conn{limits: l, h: http.Header{}, stalled: stalled, changed: make(chan struct{})}
}

func (c *conn) Header() http.Header { return c.h }
func (c *conn) WriteHeader(int)     {}
func (c *conn) Flush()              {}

func (c *conn) Write(b []byte) (int, error) {
	for {
		c.mu.Lock()
		if !c.stalled {
			defer c.mu.Unlock()
			return c.out.Write(b)
		}
		d, changed := c.deadline, c.changed
		c.mu.Unlock()
		if !d.IsZero() && !time.Now().Before(d) {
			return 0, os.ErrDeadlineExceeded
		}
		var wait <-chan time.Time
		if !d.IsZero() {
			wait = time.After(time.Until(d))
		}
		select {
		case <-wait:
		case <-changed:
		}
	}
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	close(c.changed)
	c.changed = make(chan struct{})
	return nil
}

func (c *conn) SSELimits() Limits { return c.limits }

func (c *conn) StreamDropped(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops = append(c.drops, err)
}

func (c *conn) written() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

func (c *conn) dropped() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.drops...)
}

func delta(i int) *events.Event {
	return &events.Event{Type: events.TextMessageContent, MessageID: "m", Delta: strconv.Itoa(i)}
}

// Frames arrive whole and in order, a heartbeat fills a silence, and Close
// writes what is still queued before it returns.
func TestWriterOrderHeartbeatAndClose(t *testing.T) {
	c := newConn(Limits{}, false)
	w := Start(c, 30*time.Millisecond, map[string]string{"X-Run-Id": "r1"})
	if c.h.Get("Content-Type") != "text/event-stream" || c.h.Get("X-Run-Id") != "r1" {
		t.Fatalf("headers: %v", c.h)
	}
	for i := range 500 {
		if err := w.Event(delta(i)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(120 * time.Millisecond)
	if err := w.Data([]byte("[DONE]")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := w.Event(delta(0)); !errors.Is(err, ErrClosed) {
		t.Errorf("an event after Close: %v", err)
	}
	out := c.written()
	frames := strings.Split(strings.TrimSuffix(out, "\n\n"), "\n\n")
	next, pings := 0, 0
	for _, f := range frames {
		switch {
		case f == ": ping":
			pings++
		case f == "data: [DONE]":
			if next != 500 {
				t.Errorf("[DONE] after %d events", next)
			}
			next = -1
		default:
			want := `"delta":"` + strconv.Itoa(next) + `"`
			if !strings.HasPrefix(f, `data: {"type":"TEXT_MESSAGE_CONTENT"`) || !strings.Contains(f, want) {
				t.Fatalf("frame %d: %q", next, f)
			}
			next++
		}
	}
	if next != -1 || pings == 0 {
		t.Errorf("%d events before the end, %d heartbeats:\n%.500s", next, pings, out)
	}
	if len(c.dropped()) != 0 {
		t.Errorf("a reading client was dropped: %v", c.dropped())
	}
}

// A client that stops reading never makes a run wait: its events queue
// until it is MaxQueuedBytes behind, then it is dropped (once), its
// pending write fails at once, and every later event is refused without
// waiting; Close does not wait for it either.
func TestWriterDropsAClientThatFallsBehind(t *testing.T) {
	queueFull := testutil.ToFloat64(metrics.StreamClientsDropped.WithLabelValues("sse", "queue_full"))
	c := newConn(Limits{WriteTimeout: time.Hour, MaxQueuedBytes: 16 << 10}, true)
	w := Start(c, 0, nil)
	start := time.Now()
	var err error
	n := 0
	for ; n < 1000 && err == nil; n++ {
		err = w.Event(delta(n))
	}
	if !errors.Is(err, ErrTooSlow) || n > 100 {
		t.Fatalf("after %d events: %v", n, err)
	}
	if err := w.Event(delta(0)); !errors.Is(err, ErrTooSlow) {
		t.Errorf("an event after the drop: %v", err)
	}
	w.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the run waited %v for a stalled client", took)
	}
	if d := c.dropped(); len(d) != 1 || !errors.Is(d[0], ErrTooSlow) {
		t.Errorf("drops told: %v", d)
	}
	if got := testutil.ToFloat64(metrics.StreamClientsDropped.WithLabelValues("sse", "queue_full")) - queueFull; got != 1 {
		t.Errorf("ruleagent_stream_clients_dropped_total{kind=sse,reason=queue_full} went up by %v, want 1", got)
	}
	if !errors.Is(w.Err(), ErrTooSlow) {
		t.Errorf("Err: %v", w.Err())
	}
}

// A write that makes no progress for the write timeout drops the client,
// even when it is not behind.
func TestWriterDropsAStalledWrite(t *testing.T) {
	timeouts := testutil.ToFloat64(metrics.StreamClientsDropped.WithLabelValues("sse", "write_timeout"))
	c := newConn(Limits{WriteTimeout: 100 * time.Millisecond}, true)
	start := time.Now()
	w := Start(c, 0, nil)
	if err := w.Event(delta(1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(c.dropped()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	d := c.dropped()
	if len(d) != 1 || !errors.Is(d[0], os.ErrDeadlineExceeded) {
		t.Fatalf("drops told: %v", d)
	}
	if got := testutil.ToFloat64(metrics.StreamClientsDropped.WithLabelValues("sse", "write_timeout")) - timeouts; got != 1 {
		t.Errorf("ruleagent_stream_clients_dropped_total{kind=sse,reason=write_timeout} went up by %v, want 1", got)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("dropped after %v, want about the write timeout", took)
	}
	if err := w.Event(delta(2)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an event after the drop: %v", err)
	}
	w.Close()
}

// Close waits for the last frames of a slow but reading client, no longer
// than the write timeout.
func TestWriterCloseIsBounded(t *testing.T) {
	c := newConn(Limits{WriteTimeout: 150 * time.Millisecond}, true)
	w := Start(c, 0, nil)
	_ = w.Event(delta(1))
	start := time.Now()
	w.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close waited %v", took)
	}
}

// An event with an id in its run's log goes out with an `id:` line before
// its data (what a reconnecting client sends back as Last-Event-ID); an
// event without one, and a logged event's raw JSON, as the SSE format says.
func TestWriterEventIDs(t *testing.T) {
	c := newConn(Limits{}, false)
	w := Start(c, 0, nil)
	e := delta(1)
	e.LogID = 7
	_ = w.Event(e)
	_ = w.Event(delta(2))
	_ = w.Logged(9, []byte(`{"type":"RUN_STARTED"}`))
	w.Close()
	want := "id: 7\ndata: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"1\"}\n\n" +
		"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"2\"}\n\n" +
		"id: 9\ndata: {\"type\":\"RUN_STARTED\"}\n\n"
	if got := c.written(); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
