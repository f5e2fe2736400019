package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// terminal renders a run's events for a person: the assistant's text as it
// streams, each tool call with its arguments, then its result (shortened)
// and duration, sub-agents indented under the call that started them (see
// terminal_lines.go for how parallel ones share the screen), a chain's
// result when it is not the streamed answer, and the usage at the end.
// Retries and warnings are notes: one line each on stderr, between lines
// of the transcript, never inside one. On a terminal, a status line says
// what the run waits for while nothing else is printed.
type terminal struct {
	mu    sync.Mutex
	w     io.Writer // the transcript
	errw  io.Writer // notes
	color bool
	calls map[string]*termCall

	sources map[string]*source
	queue   []*source
	owner   *source // whose unfinished line is on screen
	last    *source // who said the last line
	notes   []string

	// answer is the run's own last text message, to tell whether the
	// chain's result is what was already shown.
	answer   strings.Builder
	finished events.Event

	status *status // nil unless both outputs are a terminal
}

type termCall struct {
	name     string
	toolType string
	args     strings.Builder
	start    time.Time
	ended    bool // its arguments are complete: it runs
	done     bool // its result came
}

// newTerminal renders to w, with notes on errw; color and the status line
// are for a terminal.
func newTerminal(w, errw io.Writer, color bool) *terminal {
	t := &terminal{w: w, errw: errw, color: color, calls: map[string]*termCall{}, sources: map[string]*source{}}
	t.sources[""] = &source{}
	return t
}

const (
	dim   = "\x1b[2m"
	bold  = "\x1b[1m"
	red   = "\x1b[31m"
	green = "\x1b[32m"
	cyan  = "\x1b[36m"
	reset = "\x1b[0m"
)

func (t *terminal) paint(style, s string) string {
	if !t.color || style == "" {
		return s
	}
	return style + s + reset
}

// out writes to the transcript, first erasing the status line.
func (t *terminal) out(s string) {
	t.status.clear()
	io.WriteString(t.w, s)
}

// Emit implements events.Sink.
func (t *terminal) Emit(e events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.src(e.SubagentRunID)
	switch e.Type {
	case events.TextMessageStart:
		s.starting = true
		if s.id == "" {
			t.answer.Reset()
		}
	case events.TextMessageContent:
		if e.Delta == "" {
			return
		}
		if s.id == "" {
			t.answer.WriteString(e.Delta)
		}
		t.add(s, piece{kind: pieceText, s: e.Delta, start: s.starting})
		s.starting = false
	case events.ReasoningMessageStart:
		s.starting = true
	case events.ReasoningMessageContent:
		if e.Delta == "" {
			return
		}
		t.add(s, piece{kind: pieceThink, s: e.Delta, start: s.starting})
		s.starting = false
	case events.TextMessageEnd, events.ReasoningMessageEnd:
		t.add(s, piece{kind: pieceEnd})
	case events.ToolCallStart:
		t.calls[e.ToolCallID] = &termCall{name: e.ToolCallName, toolType: e.Meta.ToolType, start: time.Now()}
	case events.ToolCallArgs:
		if c := t.calls[e.ToolCallID]; c != nil {
			c.args.WriteString(e.Delta)
		}
	case events.ToolCallEnd:
		if c := t.calls[e.ToolCallID]; c != nil {
			c.ended = true
			t.line(s, fmt.Sprintf("%s %s %s", t.paint(cyan, "→"), t.paint(bold, c.name), shorten(compactJSON(c.args.String()), 300)))
		}
	case events.ToolCallResult:
		t.toolResult(s, e)
	case events.SubagentStarted:
		s.name = e.Name
		s.depth = t.src(e.ParentSubagentRunID).depth + 1
		t.add(s, piece{kind: pieceHeader, s: t.paint(cyan, "↳ sub-agent") + " " + t.paint(bold, e.Name)})
	case events.SubagentFinished:
		t.add(s, piece{kind: pieceEnd})
	case events.SubagentError:
		t.line(s, t.paint(red, "✗ sub-agent failed:")+" "+e.Message)
	case events.StepStarted:
		if e.Meta.Step > 0 {
			t.status.waitingFor("the model")
		}
		// The nodes of a rulechain tool, under its call. A sub-agent's
		// node is shown by the sub-agent line instead.
		if c := t.calls[e.Meta.ToolCallID]; e.Meta.NodeID != "" && (c == nil || c.toolType != "agent") {
			t.line(s, "  "+t.paint(dim, "· "+e.StepName))
		}
	case events.Custom:
		if n := noteOf(e, s.name); n != "" {
			t.note(n)
		}
	case events.RunFinished:
		t.finished = e
	}
}

func (t *terminal) toolResult(s *source, e events.Event) {
	c := t.calls[e.ToolCallID]
	name, took := e.ToolCallID, ""
	if c != nil {
		name = c.name
		c.done = true
	}
	switch {
	case e.Meta.DurationMs > 0:
		took = fmt.Sprintf(" (%s)", time.Duration(e.Meta.DurationMs)*time.Millisecond)
	case c != nil:
		took = " (<1ms)"
	}
	mark := t.paint(green, "✓")
	if e.Meta.IsError {
		mark = t.paint(red, "✗")
	}
	t.line(s, fmt.Sprintf("%s %s%s: %s", mark, name, t.paint(dim, took), shorten(oneLine(e.Content), 300)))
}

// note queues a line for stderr: it is printed as soon as no line of the
// transcript is unfinished.
func (t *terminal) note(n string) {
	t.notes = append(t.notes, n)
	if t.owner == nil {
		t.printNotes()
	}
}

func (t *terminal) printNotes() {
	if len(t.notes) == 0 {
		return
	}
	t.status.clear()
	for _, n := range t.notes {
		fmt.Fprintf(t.errw, "ruleagent: %s\n", n)
	}
	t.notes = t.notes[:0]
}

// Note prints a note (a log line, a warning) outside the transcript.
func (t *terminal) Note(n string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.note(n)
}

// running names the tool calls in progress, for the status line.
func (t *terminal) running() []string {
	var names []string
	for _, c := range t.calls {
		if c.ended && !c.done {
			names = append(names, c.name)
		}
	}
	return names
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("… (%d more characters)", len(r)-n)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// count is "1 step", "2 steps": n (a metadata value) and what it counts.
func count(n, what string) string {
	if n == "1" {
		return n + " " + what
	}
	return n + " " + what + "s"
}
