package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server"
)

// parallelSubAgents is what an orchestrator's run sends when two
// sub-agents stream at once: their chunks alternate, mid-line.
func parallelSubAgents() []events.Event {
	text := func(id, delta string) events.Event {
		return events.Event{Type: events.TextMessageContent, SubagentRunID: id, Delta: delta}
	}
	start := func(id string) events.Event {
		return events.Event{Type: events.TextMessageStart, SubagentRunID: id, Role: "assistant"}
	}
	end := func(id string) events.Event { return events.Event{Type: events.TextMessageEnd, SubagentRunID: id} }
	return []events.Event{
		{Type: events.TextMessageStart, Role: "assistant"},
		{Type: events.TextMessageContent, Delta: "I'll ask both."},
		{Type: events.TextMessageEnd},
		{Type: events.ToolCallStart, ToolCallID: "c1", ToolCallName: "Code_Reviewer", Meta: events.Meta{ToolType: "agent"}},
		{Type: events.ToolCallArgs, ToolCallID: "c1", Delta: `{"message":"review"}`},
		{Type: events.ToolCallEnd, ToolCallID: "c1"},
		{Type: events.ToolCallStart, ToolCallID: "c2", ToolCallName: "Summarizer", Meta: events.Meta{ToolType: "agent"}},
		{Type: events.ToolCallArgs, ToolCallID: "c2", Delta: `{"message":"sum"}`},
		{Type: events.ToolCallEnd, ToolCallID: "c2"},
		{Type: events.SubagentStarted, SubagentRunID: "r1", Name: "Code Reviewer", ParentToolCallID: "c1"},
		{Type: events.SubagentStarted, SubagentRunID: "r2", Name: "Summarizer", ParentToolCallID: "c2"},
		start("r1"), start("r2"),
		text("r1", "Bug: the lo"), text("r2", "- Adds a re"),
		text("r1", "op skips the last"), text("r2", "try loop\n- Fi"),
		text("r1", " element.\nSecond"), text("r2", "xes the timeout"),
		text("r1", " line."),
		end("r2"),
		{Type: events.SubagentFinished, SubagentRunID: "r2"},
		{Type: events.ToolCallResult, ToolCallID: "c2", Content: "- Adds a retry loop\n- Fixes the timeout", Meta: events.Meta{DurationMs: 812}},
		end("r1"),
		{Type: events.SubagentFinished, SubagentRunID: "r1"},
		{Type: events.ToolCallResult, ToolCallID: "c1", Content: "Bug: the loop skips the last element. Second line.", Meta: events.Meta{DurationMs: 1400}},
		{Type: events.TextMessageStart, Role: "assistant"},
		{Type: events.TextMessageContent, Delta: "Review found one bug."},
		{Type: events.TextMessageEnd},
	}
}

// TestTerminalKeepsParallelSubAgentsApart: every line of the transcript
// is one author's, whole, however the sub-agents' chunks alternate; a
// sub-agent's line is named when the line before was someone else's.
func TestTerminalKeepsParallelSubAgentsApart(t *testing.T) {
	var out, errb bytes.Buffer
	term := newTerminal(&out, &errb, false)
	for _, e := range parallelSubAgents() {
		term.Emit(e)
	}
	term.finish(runResultWithData("Review found one bug."), nil, false)
	want := `I'll ask both.
→ Code_Reviewer {"message":"review"}
→ Summarizer {"message":"sum"}
    ↳ sub-agent Code Reviewer
    ↳ sub-agent Summarizer
    Code Reviewer ▸ Bug: the loop skips the last element.
    Summarizer ▸ - Adds a retry loop
    Code Reviewer ▸ Second line.
    Summarizer ▸ - Fixes the timeout
✓ Summarizer (812ms): - Adds a retry loop - Fixes the timeout
✓ Code_Reviewer (1.4s): Bug: the loop skips the last element. Second line.
Review found one bug.
`
	if out.String() != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestTerminalStreamsOneSubAgentLive: a sub-agent alone on the screen
// streams chunk by chunk (nothing waits for its line to end), and its
// next lines line up under its name.
func TestTerminalStreamsOneSubAgentLive(t *testing.T) {
	var out, errb bytes.Buffer
	term := newTerminal(&out, &errb, false)
	term.Emit(events.Event{Type: events.SubagentStarted, SubagentRunID: "r1", Name: "Summarizer"})
	term.Emit(events.Event{Type: events.TextMessageStart, SubagentRunID: "r1"})
	term.Emit(events.Event{Type: events.TextMessageContent, SubagentRunID: "r1", Delta: "- Adds a re"})
	if got := out.String(); !strings.HasSuffix(got, "    Summarizer ▸ - Adds a re") {
		t.Fatalf("the chunk waited: %q", got)
	}
	term.Emit(events.Event{Type: events.TextMessageContent, SubagentRunID: "r1", Delta: "try loop\n- Fixes it"})
	term.Emit(events.Event{Type: events.TextMessageEnd, SubagentRunID: "r1"})
	want := "    ↳ sub-agent Summarizer\n    Summarizer ▸ - Adds a retry loop\n                 - Fixes it\n"
	if out.String() != want {
		t.Fatalf("transcript:\n%q\nwant:\n%q", out.String(), want)
	}
}

// TestTerminalNotesWaitForTheLine: a retry and a log line are notes on
// stderr, one human line each, printed when no transcript line is
// unfinished, never into stdout.
func TestTerminalNotesWaitForTheLine(t *testing.T) {
	var out, errb bytes.Buffer
	term := newTerminal(&out, &errb, false)
	term.Emit(events.Event{Type: events.TextMessageStart})
	term.Emit(events.Event{Type: events.TextMessageContent, Delta: "Hello"})
	term.Emit(events.Event{Type: events.Custom, Name: "ruleagent.llm_retry",
		Value: []byte(`{"url":"http://llm/v1","model":"m","attempt":1,"status":429,"delayMs":500,"error":"LLM http://llm/v1 (model m) answered 429: slow down"}`)})
	term.Note("warning: something (k=v)")
	if errb.Len() != 0 {
		t.Fatalf("a note was printed mid-line: %q", errb.String())
	}
	term.Emit(events.Event{Type: events.TextMessageContent, Delta: " world"})
	term.Emit(events.Event{Type: events.TextMessageEnd})
	wantErr := "ruleagent: retrying the LLM call in 500ms (retry 1): LLM http://llm/v1 (model m) answered 429: slow down\n" +
		"ruleagent: warning: something (k=v)\n"
	if out.String() != "Hello world\n" || errb.String() != wantErr {
		t.Fatalf("stdout %q\nstderr %q", out.String(), errb.String())
	}
}

func runResultWithData(data string) server.RunResult {
	return server.RunResult{Msg: types.NewMsg(0, "", types.TEXT, types.NewMetadata(), data), Relation: types.Success, Outcome: server.OutcomeSuccess}
}

// TestTerminalReasoningThenAnswer: reasoning is labelled once, on a line
// of its own, and the answer starts on the next line; a sub-agent's
// reasoning is named like its text.
func TestTerminalReasoningThenAnswer(t *testing.T) {
	var out, errb bytes.Buffer
	term := newTerminal(&out, &errb, false)
	for _, e := range []events.Event{
		{Type: events.ReasoningMessageStart},
		{Type: events.ReasoningMessageContent, Delta: "The user greets me;"},
		{Type: events.ReasoningMessageContent, Delta: " I greet back."},
		{Type: events.ReasoningMessageEnd},
		{Type: events.TextMessageStart},
		{Type: events.TextMessageContent, Delta: "Hello!"},
		{Type: events.TextMessageEnd},
		{Type: events.SubagentStarted, SubagentRunID: "r1", Name: "Helper"},
		{Type: events.ReasoningMessageStart, SubagentRunID: "r1"},
		{Type: events.ReasoningMessageContent, SubagentRunID: "r1", Delta: "Short."},
		{Type: events.ReasoningMessageEnd, SubagentRunID: "r1"},
		{Type: events.TextMessageStart, SubagentRunID: "r1"},
		{Type: events.TextMessageContent, SubagentRunID: "r1", Delta: "Hi."},
		{Type: events.TextMessageEnd, SubagentRunID: "r1"},
	} {
		term.Emit(e)
	}
	want := "thinking: The user greets me; I greet back.\nHello!\n    ↳ sub-agent Helper\n    Helper ▸ thinking: Short.\n    Helper ▸ Hi.\n"
	if out.String() != want {
		t.Fatalf("transcript:\n%q\nwant:\n%q", out.String(), want)
	}
}
