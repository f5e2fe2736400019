package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/events"
)

// noteOf turns a CUSTOM event that a person should hear about (an LLM
// retry or failover, a warning) into one line; "" for the others. who
// names the sub-agent it happened in ("" for the run itself).
func noteOf(e events.Event, who string) string {
	v := e.Value
	var n string
	switch e.Name {
	case "ruleagent.llm_retry":
		n = fmt.Sprintf("retrying the LLM call in %s (retry %d): %s",
			time.Duration(gjson.GetBytes(v, "delayMs").Int())*time.Millisecond, gjson.GetBytes(v, "attempt").Int(), gjson.GetBytes(v, "error").String())
	case "ruleagent.llm_failover":
		n = fmt.Sprintf("switching to the LLM %s (model %s): %s",
			gjson.GetBytes(v, "url").String(), gjson.GetBytes(v, "model").String(), gjson.GetBytes(v, "error").String())
	case "ruleagent.warning", "ruleagent.session_warning":
		n = "warning: " + gjson.GetBytes(v, "message").String()
	default:
		return ""
	}
	n = oneLine(n)
	if who != "" {
		n = who + ": " + n
	}
	return n
}

// noteLog is the human log handler of `run`: each record (warnings and
// errors; the run summary an info line would repeat is in the usage line)
// becomes one note, `ruleagent: warning: message (key=value ...)`. Before
// the run starts notes go straight to stderr; during the run, through the
// terminal, between lines of the transcript.
type noteLog struct {
	out *noteSink
	pre []slog.Attr
}

// noteSink is where notes go: stderr, or a terminal once one is set.
type noteSink struct {
	mu   sync.Mutex
	w    io.Writer
	term interface{ Note(string) }
}

func (s *noteSink) note(n string) {
	s.mu.Lock()
	term := s.term
	s.mu.Unlock()
	if term != nil {
		term.Note(n)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "ruleagent: %s\n", n)
}

// through sends the notes through term from now on (nil: stderr again).
func (s *noteSink) through(term interface{ Note(string) }) {
	s.mu.Lock()
	s.term = term
	s.mu.Unlock()
}

func (h *noteLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *noteLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if r.Level >= slog.LevelError {
		b.WriteString("error: ")
	} else {
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	var attrs []string
	add := func(a slog.Attr) bool {
		if a.Key != "" && !a.Equal(slog.Attr{}) {
			attrs = append(attrs, a.Key+"="+a.Value.Resolve().String())
		}
		return true
	}
	for _, a := range h.pre {
		add(a)
	}
	r.Attrs(add)
	if len(attrs) > 0 {
		b.WriteString(" (" + strings.Join(attrs, " ") + ")")
	}
	h.out.note(oneLine(b.String()))
	return nil
}

func (h *noteLog) WithAttrs(as []slog.Attr) slog.Handler {
	return &noteLog{out: h.out, pre: append(h.pre[:len(h.pre):len(h.pre)], as...)}
}

// WithGroup is not needed by the few lines `run` logs: attributes keep
// their own keys.
func (h *noteLog) WithGroup(string) slog.Handler { return h }

// logNotes makes slog's default logger (and the log package, which writes
// through it) write notes to s, until the returned func restores both.
func logNotes(s *noteSink) (restore func()) {
	prev, w, flags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(&noteLog{out: s}))
	return func() {
		slog.SetDefault(prev)
		log.SetOutput(w)
		log.SetFlags(flags)
	}
}
