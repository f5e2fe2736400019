package server

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// TestProgressMessages: which events become progress, in which words, and
// how streamed text is thinned out.
func TestProgressMessages(t *testing.T) {
	clock := time.Unix(0, 0)
	p := newProgressSink(context.Background(), nil, "t", 250*time.Millisecond)
	p.now = func() time.Time { return clock }
	at := func(ms int) { clock = time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		ms int
		e  events.Event
	}{
		{0, events.Event{Type: events.RunStarted}},
		{0, events.Event{Type: events.StepStarted, Meta: events.Meta{Step: 1}}},
		{1, events.Event{Type: events.ReasoningMessageContent, Delta: "hm"}},
		{2, events.Event{Type: events.ReasoningMessageContent, Delta: "hm"}},
		{3, events.Event{Type: events.ToolCallStart, ToolCallID: "c1", ToolCallName: "read"}},
		{3, events.Event{Type: events.ToolCallArgs, ToolCallID: "c1", Delta: "{}"}},
		{4, events.Event{Type: events.ToolCallStart, ToolCallID: "c2", ToolCallName: "bash"}},
		{5, events.Event{Type: events.ToolCallResult, ToolCallID: "c2", Meta: events.Meta{IsError: true}}},
		{6, events.Event{Type: events.ToolCallResult, ToolCallID: "c1"}},
		{7, events.Event{Type: events.ToolCallResult, ToolCallID: "unknown"}},
		{8, events.Event{Type: events.StepStarted, Meta: events.Meta{Step: 1, NodeID: "n1"}}},
		{9, events.Event{Type: events.StepStarted, Meta: events.Meta{Step: 2}}},
		{10, events.Event{Type: events.SubagentStarted, SubagentRunID: "s1", Name: "critic"}},
		{11, events.Event{Type: events.ToolCallStart, SubagentRunID: "s1", ToolCallID: "s1:c1", ToolCallName: "grep"}},
		{12, events.Event{Type: events.SubagentFinished, SubagentRunID: "s1"}},
		{13, events.Event{Type: events.Custom, Name: "ruleagent.llm_retry"}},
		{14, events.Event{Type: events.Custom, Name: "something.else"}},
		{20, events.Event{Type: events.TextMessageContent, Delta: "a"}},
		{100, events.Event{Type: events.TextMessageContent, Delta: "b"}},
		{269, events.Event{Type: events.TextMessageContent, Delta: "c"}},
		{270, events.Event{Type: events.TextMessageContent, Delta: "d"}},
		{300, events.Event{Type: events.TextMessageEnd}},
		{301, events.Event{Type: events.RunFinished}},
	}
	var got []string
	for _, s := range steps {
		at(s.ms)
		if msg, ok := p.describe(s.e); ok {
			got = append(got, msg)
		}
	}
	want := []string{
		"started", "thinking", "calling read", "calling bash", "bash failed", "read returned",
		"asking the model again (turn 2)", "starting sub-agent critic", "critic: calling grep",
		"sub-agent critic finished", "retrying the model", "writing the answer", "writing the answer",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestProgressStops: nothing is sent once the call has its result.
func TestProgressStops(t *testing.T) {
	p := newProgressSink(context.Background(), nil, "t", time.Millisecond)
	p.stop()
	p.Emit(events.Event{Type: events.RunStarted}) // a nil server would panic if it were used
	if p.progress != 0 {
		t.Fatalf("progress %d after stop", p.progress)
	}
}
