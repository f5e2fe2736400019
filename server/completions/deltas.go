// Package completions renders a run's AG-UI events as the OpenAI
// chat-completions API answers them: `chat.completion.chunk` SSE frames for
// a streamed request, one `chat.completion` object otherwise.
//
// What the model writes becomes content (reasoning becomes
// reasoning_content, as vLLM and DeepSeek send it). The agent's own tool
// calls are not the client's to answer, so they are never sent as
// tool_calls: by default they appear in the content as readable lines
// ("> → name {args}", then "> ✓ name (12 ms): result"). Calls of the tools
// the client offered are sent as tool_calls, and the answer then ends with
// finish_reason "tool_calls".
package completions

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
)

// activityResultMax bounds how much of a tool result the activity line
// quotes.
const activityResultMax = 200

// Deltas receives the pieces of an answer in order.
type Deltas interface {
	Content(s string)
	Reasoning(s string)
	// ToolCall starts call index of the client's tools; Arguments follow.
	ToolCall(index int, id, name string)
	Arguments(index int, s string)
}

// Translator turns a run's events into Deltas. It is an events.Sink; the
// run's stream calls it from one goroutine at a time.
type Translator struct {
	Out Deltas
	// ToolActivity writes the agent's own tool calls into the content.
	ToolActivity bool

	clientCalls map[string]int // client tool call id -> index
	own         map[string]*ownCall
	// ran counts the agent's own tool calls that started (their side
	// effects happened, or may have); ranNames holds the first few names.
	ran      int
	ranNames []string
	// wrote says whether any content was written; sep is what must come
	// before the next content (a paragraph break after a message or an
	// activity line).
	wrote bool
	sep   string
}

type ownCall struct {
	name  string
	args  strings.Builder
	start time.Time
}

// Emit implements events.Sink.
func (t *Translator) Emit(e events.Event) {
	if e.SubagentRunID != "" {
		// A sub-agent's work shows as the call that started it.
		return
	}
	switch e.Type {
	case events.TextMessageContent:
		if e.Delta != "" {
			t.content(e.Delta)
		}
	case events.ReasoningMessageContent:
		if e.Delta != "" {
			t.Out.Reasoning(e.Delta)
		}
	case events.ToolCallStart:
		if e.Meta.ToolType == agent.ToolTypeClient {
			if t.clientCalls == nil {
				t.clientCalls = map[string]int{}
			}
			i := len(t.clientCalls)
			t.clientCalls[e.ToolCallID] = i
			t.Out.ToolCall(i, e.ToolCallID, e.ToolCallName)
			return
		}
		t.ran++
		if len(t.ranNames) < maxRanNames && !slices.Contains(t.ranNames, e.ToolCallName) {
			t.ranNames = append(t.ranNames, e.ToolCallName)
		}
		if t.ToolActivity {
			if t.own == nil {
				t.own = map[string]*ownCall{}
			}
			t.own[e.ToolCallID] = &ownCall{name: e.ToolCallName, start: time.Now()}
		}
	case events.ToolCallArgs:
		if i, ok := t.clientCalls[e.ToolCallID]; ok {
			t.Out.Arguments(i, e.Delta)
		} else if c := t.own[e.ToolCallID]; c != nil {
			c.args.WriteString(e.Delta)
		}
	case events.ToolCallEnd:
		if c := t.own[e.ToolCallID]; c != nil {
			t.line("> → " + c.name + " " + oneLine(c.args.String(), activityResultMax))
		}
	case events.ToolCallResult:
		if c := t.own[e.ToolCallID]; c != nil {
			delete(t.own, e.ToolCallID)
			mark := "✓"
			if e.Meta.IsError {
				mark = "✗"
			}
			d := e.Meta.DurationMs
			if d == 0 {
				d = time.Since(c.start).Milliseconds()
			}
			t.line("> " + mark + " " + c.name + " (" + strconv.FormatInt(d, 10) + " ms): " + oneLine(e.Content, activityResultMax))
		}
	case events.TextMessageEnd:
		t.sep = "\n\n"
	}
}

// maxRanNames bounds the tool names ToolsRan reports.
const maxRanNames = 5

// ToolsRan returns how many of the agent's own tool calls started (a
// sub-agent or a chain called as a tool counts as one), and the names of
// the first few tools.
func (t *Translator) ToolsRan() (int, []string) { return t.ran, t.ranNames }

// ClientCalls reports whether the client's tools were called.
func (t *Translator) ClientCalls() bool { return len(t.clientCalls) > 0 }

func (t *Translator) content(s string) {
	if t.wrote && t.sep != "" {
		t.Out.Content(t.sep)
	}
	t.sep = ""
	t.wrote = true
	t.Out.Content(s)
}

// line writes one activity line as a paragraph of its own.
func (t *Translator) line(s string) {
	if t.sep == "" {
		t.sep = "\n\n"
	}
	t.content(s)
	t.sep = "\n\n"
}

// oneLine flattens s to one line of at most max characters.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// Wrote reports whether any content was written.
func (t *Translator) Wrote() bool { return t.wrote }
