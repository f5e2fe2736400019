package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// status is the line that says what a run waits for (the model, a tool,
// the chain) while nothing else is printed, with a spinner and the time
// since the run started. It is drawn only when both stdout and stderr are
// a terminal, on stderr, only at the start of a line, and erased before
// anything else is written, so it never shows in the transcript. A nil
// *status does nothing.
type status struct {
	t       *terminal
	w       io.Writer
	label   string // what the run waits for when no tool call runs
	start   time.Time
	lastOut time.Time
	shown   bool
	frame   int
	stop    chan struct{}
	done    chan struct{}
}

const (
	statusEvery = 100 * time.Millisecond
	// statusIdle is how long the transcript is quiet before the status
	// line shows: streamed text never flickers with it.
	statusIdle = 200 * time.Millisecond
	statusWide = 60
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// showStatus starts t's status line on w; close stops it.
func (t *terminal) showStatus(w io.Writer, chain string) {
	now := time.Now()
	s := &status{t: t, w: w, label: "running " + chain, start: now, lastOut: now.Add(-statusIdle),
		stop: make(chan struct{}), done: make(chan struct{})}
	t.status = s
	go s.run()
}

func (s *status) run() {
	defer close(s.done)
	tk := time.NewTicker(statusEvery)
	defer tk.Stop()
	s.tick()
	for {
		select {
		case <-s.stop:
			return
		case <-tk.C:
			s.tick()
		}
	}
}

func (s *status) tick() {
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owner != nil || len(t.queue) > 0 || time.Since(s.lastOut) < statusIdle {
		return
	}
	label := s.label
	if names := t.running(); len(names) > 0 {
		slices.Sort(names)
		label = "running " + strings.Join(names, ", ")
	}
	if utf8.RuneCountInString(label) > statusWide {
		label = string([]rune(label)[:statusWide-1]) + "…"
	}
	took := time.Since(s.start).Seconds()
	fmt.Fprintf(s.w, "\r\x1b[K%s %s", spinner[s.frame%len(spinner)], t.paint(dim, fmt.Sprintf("%s · %.1fs", label, took)))
	s.frame++
	s.shown = true
}

// clear erases the status line before other output, and restarts the
// wait before it shows again.
func (s *status) clear() {
	if s == nil {
		return
	}
	s.lastOut = time.Now()
	if s.shown {
		io.WriteString(s.w, "\r\x1b[K")
		s.shown = false
	}
}

// waitingFor sets what the run waits for when no tool call runs.
func (s *status) waitingFor(what string) {
	if s != nil {
		s.label = "waiting for " + what
	}
}

// close stops the status line and erases it. t.mu must not be held.
func (s *status) close() {
	if s == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.t.mu.Lock()
	s.clear()
	s.t.mu.Unlock()
}
