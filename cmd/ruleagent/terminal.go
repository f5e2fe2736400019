package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
)

// terminal renders a run's events for a person: the assistant's text as it
// streams, each tool call with its arguments, then its result (shortened)
// and duration, sub-agents indented under the call that started them, and
// the usage at the end.
type terminal struct {
	mu       sync.Mutex
	w        io.Writer
	color    bool
	calls    map[string]*termCall
	depth    map[string]int    // subagentRunId -> nesting depth
	names    map[string]string // subagentRunId -> sub-agent name
	midLine  bool
	inThink  bool
	finished events.Event
}

type termCall struct {
	name     string
	toolType string
	args     strings.Builder
	start    time.Time
}

func newTerminal(w io.Writer, color bool) *terminal {
	return &terminal{w: w, color: color, calls: map[string]*termCall{}, depth: map[string]int{}, names: map[string]string{}}
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
	if !t.color {
		return s
	}
	return style + s + reset
}

// Emit implements events.Sink.
func (t *terminal) Emit(e events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ind := strings.Repeat("    ", t.depth[e.SubagentRunID])
	switch e.Type {
	case events.TextMessageStart:
		t.newline()
		t.endThink()
		fmt.Fprint(t.w, ind)
		if name := t.names[e.SubagentRunID]; name != "" {
			// Parallel sub-agents interleave: say whose text this is.
			fmt.Fprint(t.w, t.paint(cyan, name+" ▸ "))
		}
	case events.TextMessageContent:
		t.write(ind, e.Delta, "")
	case events.TextMessageEnd:
		t.newline()
	case events.ReasoningMessageContent:
		if !t.inThink {
			t.newline()
			fmt.Fprint(t.w, ind+t.paint(dim, "thinking: "))
			t.inThink = true
		}
		t.write(ind, e.Delta, dim)
	case events.ReasoningMessageEnd:
		t.endThink()
	case events.ToolCallStart:
		t.calls[e.ToolCallID] = &termCall{name: e.ToolCallName, toolType: e.Meta.ToolType, start: time.Now()}
	case events.ToolCallArgs:
		if c := t.calls[e.ToolCallID]; c != nil {
			c.args.WriteString(e.Delta)
		}
	case events.ToolCallEnd:
		if c := t.calls[e.ToolCallID]; c != nil {
			t.newline()
			fmt.Fprintf(t.w, "%s%s %s %s\n", ind, t.paint(cyan, "→"), t.paint(bold, c.name), shorten(compactJSON(c.args.String()), 300))
		}
	case events.ToolCallResult:
		c := t.calls[e.ToolCallID]
		name, took := e.ToolCallID, ""
		if c != nil {
			name = c.name
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
		t.newline()
		fmt.Fprintf(t.w, "%s%s %s%s: %s\n", ind, mark, name, t.paint(dim, took), shorten(oneLine(e.Content), 300))
	case events.SubagentStarted:
		parent := t.depth[e.ParentSubagentRunID]
		t.depth[e.SubagentRunID] = parent + 1
		t.names[e.SubagentRunID] = e.Name
		t.newline()
		fmt.Fprintf(t.w, "%s%s %s\n", strings.Repeat("    ", parent+1), t.paint(cyan, "↳ sub-agent"), t.paint(bold, e.Name))
	case events.SubagentError:
		t.newline()
		fmt.Fprintf(t.w, "%s%s %s\n", ind, t.paint(red, "✗ sub-agent failed:"), e.Message)
	case events.StepStarted:
		// The nodes of a rulechain tool, under its call. A sub-agent's
		// node is shown by the sub-agent line instead.
		if c := t.calls[e.Meta.ToolCallID]; e.Meta.NodeID != "" && (c == nil || c.toolType != "agent") {
			t.newline()
			fmt.Fprintf(t.w, "%s  %s\n", ind, t.paint(dim, "· "+e.StepName))
		}
	case events.Custom:
		if strings.HasPrefix(e.Name, "ruleagent.llm_") {
			t.newline()
			fmt.Fprintf(t.w, "%s%s %s\n", ind, t.paint(dim, "! "+strings.TrimPrefix(e.Name, "ruleagent.")), shorten(string(e.Value), 300))
		}
	case events.RunFinished:
		t.finished = e
	}
}

func (t *terminal) write(ind, s, style string) {
	if ind != "" {
		s = strings.ReplaceAll(s, "\n", "\n"+ind)
	}
	fmt.Fprint(t.w, t.paint(style, s))
	t.midLine = !strings.HasSuffix(s, "\n")
}

func (t *terminal) newline() {
	if t.midLine {
		fmt.Fprintln(t.w)
		t.midLine = false
	}
}

func (t *terminal) endThink() {
	if t.inThink {
		t.newline()
		t.inThink = false
	}
}

// finish prints the usage line after the run.
func (t *terminal) finish(msg types.RuleMsg, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newline()
	if err != nil {
		return
	}
	md := types.NewMetadata()
	if msg.Metadata != nil {
		md = msg.Metadata
	}
	parts := []string{}
	if m := md.GetValue("model"); m != "" {
		parts = append(parts, "model "+m)
	}
	if s := md.GetValue("steps"); s != "" {
		parts = append(parts, count(s, "step"))
	}
	if c := md.GetValue("toolCalls"); c != "" {
		parts = append(parts, count(c, "tool call"))
	}
	if p := md.GetValue("promptTokens"); p != "" {
		parts = append(parts, fmt.Sprintf("tokens %s in / %s out (%s total)", p, md.GetValue("completionTokens"), md.GetValue("totalTokens")))
	}
	if md.GetValue("truncated") == "true" {
		parts = append(parts, "answer forced at maxStep")
	}
	if len(parts) > 0 {
		fmt.Fprintln(t.w, t.paint(dim, "— "+strings.Join(parts, " · ")))
	}
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
