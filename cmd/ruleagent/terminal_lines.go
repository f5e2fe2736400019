package main

import (
	"strings"
	"unicode/utf8"
)

// The transcript has several authors at once: the run itself and each
// sub-agent, and sub-agents called in parallel stream at the same time.
// Each author's output is queued until the line is free, so that a line
// never holds two authors' text:
//
//   - text streams chunk by chunk while its author holds the line (its
//     last line is not finished); another author's output waits, and is
//     printed, whole lines first, as soon as that line ends;
//   - when several authors wait, they take turns line by line, in the
//     order they started waiting;
//   - a sub-agent's lines start with its name (`Name ▸ `) when the line
//     before was someone else's, else with as many spaces, so that who
//     said what stays readable however the lines alternate.

// source is one author of the transcript: the run itself (id "") or a
// sub-agent's run.
type source struct {
	id    string
	name  string // the sub-agent's name; "" for the run itself
	depth int    // nesting: 0 for the run, 1 for its sub-agents, ...
	pend  []piece
	// queued: the source waits in terminal.queue.
	queued bool
	// starting: the next text or reasoning chunk starts a message.
	starting bool
}

type pieceKind uint8

const (
	pieceText   pieceKind = iota // streamed answer text
	pieceThink                   // streamed reasoning
	pieceLine                    // one whole line (a tool call, a result, a step)
	pieceHeader                  // a sub-agent's first line, which names it
	pieceEnd                     // the end of a text or reasoning message
)

type piece struct {
	kind pieceKind
	s    string
	// start marks the first chunk of a message: its line is tagged with
	// the author's name, and reasoning is labelled.
	start bool
}

// src returns the source of a sub-agent run id ("" for the run itself).
func (t *terminal) src(id string) *source {
	s := t.sources[id]
	if s == nil {
		s = &source{id: id}
		t.sources[id] = s
	}
	return s
}

// add queues p for s and prints what may be printed.
func (t *terminal) add(s *source, p piece) {
	n := len(s.pend)
	if (p.kind == pieceText || p.kind == pieceThink) && !p.start && n > 0 && s.pend[n-1].kind == p.kind {
		s.pend[n-1].s += p.s
	} else {
		s.pend = append(s.pend, p)
	}
	switch {
	case t.owner == s:
		t.flush(s)
	case t.owner == nil && len(t.queue) == 0:
		t.flush(s)
	default:
		t.enqueue(s)
	}
	t.pump()
}

// line queues one whole line of s.
func (t *terminal) line(s *source, text string) { t.add(s, piece{kind: pieceLine, s: text}) }

func (t *terminal) enqueue(s *source) {
	if !s.queued && len(s.pend) > 0 {
		s.queued = true
		t.queue = append(t.queue, s)
	}
}

// waiting reports whether an author other than s has output queued.
func (t *terminal) waiting(s *source) bool {
	for _, q := range t.queue {
		if q != s {
			return true
		}
	}
	return false
}

// pump lets the waiting authors print, in turn, while the line is free,
// then prints the notes that waited for it.
func (t *terminal) pump() {
	for t.owner == nil && len(t.queue) > 0 {
		s := t.queue[0]
		t.queue = t.queue[1:]
		s.queued = false
		t.flush(s)
	}
	if t.owner == nil {
		t.printNotes()
	}
}

// flush prints s's queued output; s holds the line or nobody does. It
// yields to the other waiting authors after each finished line.
func (t *terminal) flush(s *source) {
	for len(s.pend) > 0 {
		p := &s.pend[0]
		switch p.kind {
		case pieceEnd:
			if t.owner == s {
				t.endLine()
			}
		case pieceLine, pieceHeader:
			t.endLine()
			t.startLine(s, p.kind == pieceHeader, false)
			t.out(p.s)
			t.out("\n")
		case pieceText, pieceThink:
			if p.start && t.owner == s {
				t.endLine() // a new message starts on a line of its own
			}
			if t.writeText(s, p) {
				t.enqueue(s)
				return
			}
		}
		s.pend = s.pend[1:]
		if t.owner == nil && len(s.pend) > 0 && t.waiting(s) {
			t.enqueue(s)
			return
		}
	}
	s.pend = nil
}

// writeText prints p's text; it stops after a finished line when another
// author waits, leaving the rest in p, and reports whether it stopped.
func (t *terminal) writeText(s *source, p *piece) (yielded bool) {
	style := ""
	if p.kind == pieceThink {
		style = dim
	}
	for p.s != "" {
		seg, rest, full := strings.Cut(p.s, "\n")
		if t.owner == nil && seg != "" {
			t.startLine(s, false, p.start)
			if p.start && p.kind == pieceThink {
				t.out(t.paint(dim, "thinking: "))
			}
			p.start = false
			t.owner = s
		}
		if seg != "" {
			t.out(t.paint(style, seg))
		}
		if !full {
			p.s = ""
			return false
		}
		p.s = rest
		t.out("\n")
		t.owner = nil
		if p.s != "" && t.waiting(s) {
			return true
		}
	}
	return false
}

// startLine begins a line of s: its indentation, then its name (a
// sub-agent's) unless it said the line before, or the line is its header.
func (t *terminal) startLine(s *source, header, tagged bool) {
	if s.depth > 0 {
		t.out(strings.Repeat("    ", s.depth))
	}
	switch {
	case header || s.name == "":
	case tagged || t.last != s:
		t.out(t.paint(cyan, s.name+" ▸ "))
	default:
		t.out(strings.Repeat(" ", utf8.RuneCountInString(s.name)+3))
	}
	t.last = s
	if header {
		t.last = nil // the first line after a header names its author
	}
}

// endLine finishes the line in progress, if any.
func (t *terminal) endLine() {
	if t.owner != nil {
		t.out("\n")
		t.owner = nil
	}
}

// drain prints everything still queued, each author's unfinished line
// ended, at the end of the run.
func (t *terminal) drain() {
	t.endLine()
	for len(t.queue) > 0 {
		s := t.queue[0]
		t.queue = t.queue[1:]
		s.queued = false
		t.flush(s)
		t.endLine()
	}
	t.printNotes()
}
