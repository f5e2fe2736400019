package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// repeatWindow is how long a repeated go-redis message (the same format,
// such as a failed dial every second while Redis is down) stays quiet after
// it was logged; the next one says how many were left out.
const repeatWindow = 30 * time.Second

// LogTo sends go-redis's own messages (a failed dial, a connection the pool
// dropped) to l, at Warn, as structured records with component=redis,
// instead of the unstructured lines go-redis prints on stderr. A message
// that repeats (the same format) is logged once per 30 s with the count of
// those left out. go-redis has one logger per process: the last LogTo
// wins.
func LogTo(l *slog.Logger) {
	redis.SetLogger(&slogLogging{l: l, last: map[string]*repeat{}, now: time.Now})
}

// slogLogging is go-redis's internal.Logging over slog.
type slogLogging struct {
	l   *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	last map[string]*repeat // by format
}

// repeat is when a format was last logged, and how often since.
type repeat struct {
	at      time.Time
	skipped int
}

// Printf implements go-redis's internal.Logging.
func (s *slogLogging) Printf(ctx context.Context, format string, v ...any) {
	now := s.now()
	s.mu.Lock()
	r := s.last[format]
	if r != nil && now.Sub(r.at) < repeatWindow {
		r.skipped++
		s.mu.Unlock()
		return
	}
	skipped := 0
	if r != nil {
		skipped = r.skipped
	}
	if len(s.last) > 64 { // formats are constants: this only bounds a surprise
		clear(s.last)
	}
	s.last[format] = &repeat{at: now}
	s.mu.Unlock()
	msg := strings.TrimSpace(strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "))
	attrs := []any{"component", "redis"}
	if skipped > 0 {
		attrs = append(attrs, "repeated", skipped)
	}
	s.l.WarnContext(ctx, msg, attrs...)
}
