package redisconn

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// TestLogToStructuresGoRedisMessages: with Redis down, go-redis's dial
// failures reach the slog logger as structured records (component=redis),
// not as its own stderr lines, and a repeat within the window is counted,
// not logged again.
func TestLogToStructuresGoRedisMessages(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, nil))
	LogTo(l)
	t.Cleanup(func() { LogTo(slog.New(slog.DiscardHandler)) })

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Open(ctx, "redis://"+addr, Options{Timeout: 200 * time.Millisecond, Wait: 1500 * time.Millisecond}); err == nil {
		t.Fatal("Open succeeded with nothing listening")
	}
	out := buf.String()
	if !strings.Contains(out, `"component":"redis"`) || !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "failed to dial") {
		t.Fatalf("go-redis's dial failure was not logged through slog:\n%s", out)
	}
	if strings.Contains(out, `"msg":"redis: `) {
		t.Errorf("the message keeps go-redis's own prefix:\n%s", out)
	}
}

// TestLogToCountsRepeats: the same message again within the window is left
// out and counted on the next one logged after it.
func TestLogToCountsRepeats(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	s := &slogLogging{l: slog.New(slog.NewJSONHandler(&buf, nil)), last: map[string]*repeat{}, now: func() time.Time { return clock }}
	const f = "redis: connection pool: failed to dial after %d attempts: %v"
	for i := range 5 {
		s.Printf(context.Background(), f, i+1, "connection refused")
	}
	clock = clock.Add(repeatWindow)
	s.Printf(context.Background(), f, 6, "connection refused")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "repeated") || !strings.Contains(lines[1], `"repeated":4`) {
		t.Fatalf("want the first line, then one carrying repeated=4:\n%s", buf.String())
	}
}
