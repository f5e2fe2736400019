package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// TestProgressMessages: which events become progress, in which words, and
// how streamed text is thinned out.
func TestProgressMessages(t *testing.T) {
	clock := time.Unix(0, 0)
	p := newProgressSink(250 * time.Millisecond)
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
		{8, events.Event{Type: events.StepFinished, StepName: "Check the order", Meta: events.Meta{NodeID: "n1"}}},
		{8, events.Event{Type: events.StepFinished, StepName: "Lookup", Meta: events.Meta{NodeID: "n2", IsError: true}}},
		{8, events.Event{Type: events.StepFinished, StepName: "Nested", Meta: events.Meta{NodeID: "n3", ToolCallID: "c1"}}},
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
		"Check the order done", "Lookup failed", "asking the model again (turn 2)", "starting sub-agent critic", "critic: calling grep",
		"sub-agent critic finished", "retrying the model", "writing the answer", "writing the answer",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}

// TestProgressFollowsTheRequest: notifications go to the request attached
// to the run, under its token, counting on; none while no request waits.
func TestProgressFollowsTheRequest(t *testing.T) {
	p := newProgressSink(time.Millisecond)
	p.Emit(events.Event{Type: events.RunStarted}) // no request yet
	first, second := &recordingPeer{}, &recordingPeer{}
	p.attach(first, "t1")
	p.Emit(events.Event{Type: events.ToolCallStart, ToolCallID: "c1", ToolCallName: "read"})
	p.detach(true)
	p.Emit(events.Event{Type: events.ToolCallResult, ToolCallID: "c1"}) // waiting for input
	p.attach(second, 7)
	p.Emit(events.Event{Type: events.ToolCallStart, ToolCallID: "c2", ToolCallName: "write"})
	p.attach(second, nil) // a request that asked for no progress
	p.Emit(events.Event{Type: events.ToolCallResult, ToolCallID: "c2"})
	if want := []string{"t1 1 calling read"}; !slices.Equal(first.sent, want) {
		t.Errorf("first request got %q, want %q", first.sent, want)
	}
	if want := []string{"7 2 calling write"}; !slices.Equal(second.sent, want) {
		t.Errorf("second request got %q, want %q", second.sent, want)
	}
}

// recordingPeer records the progress it is sent.
type recordingPeer struct{ sent []string }

func (r *recordingPeer) progress(token any, n int, msg string) {
	r.sent = append(r.sent, fmt.Sprintf("%v %d %s", token, n, msg))
}

func (r *recordingPeer) elicit(context.Context, ask.Question) (ask.Answer, error) {
	return ask.Answer{}, errors.New("not asked in this test")
}
