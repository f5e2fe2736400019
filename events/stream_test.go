package events

import (
	"sync"
	"testing"
)

func TestStreamOneTerminal(t *testing.T) {
	var rec Recorder
	s := NewStream(&rec, "t1", "r1")
	s.Emit(Event{Type: RunStarted})
	s.Emit(Event{Type: RunError, Message: "x"})
	s.Emit(Event{Type: RunFinished})
	s.Emit(Event{Type: TextMessageStart, MessageID: "m"})
	types := rec.Types()
	if len(types) != 2 || types[1] != RunError {
		t.Fatalf("got %v", types)
	}
	if s.Dropped() != 2 {
		t.Fatalf("dropped = %d", s.Dropped())
	}
	evs := rec.Events()
	if evs[0].ThreadID != "t1" || evs[0].RunID != "r1" || evs[0].Timestamp == 0 {
		t.Fatalf("run started not stamped: %+v", evs[0])
	}
}

func TestStreamClosesOpenBeforeFinish(t *testing.T) {
	var rec Recorder
	s := NewStream(&rec, "t", "r")
	s.Emit(Event{Type: RunStarted})
	s.Emit(Event{Type: StepStarted, StepName: "a"})
	s.Emit(Event{Type: TextMessageStart, MessageID: "m"})
	s.Emit(Event{Type: ReasoningStart, MessageID: "r"})
	s.Emit(Event{Type: ReasoningMessageStart, MessageID: "r"})
	s.Emit(Event{Type: ReasoningMessageEnd, MessageID: "r"})
	s.Emit(Event{Type: ToolCallStart, ToolCallID: "c", ToolCallName: "x"})
	s.Emit(Event{Type: TextMessageStart, MessageID: "sub", SubagentRunID: "s"})
	s.Emit(Event{Type: RunFinished})
	got := rec.Types()
	want := []Type{RunStarted, StepStarted, TextMessageStart, ReasoningStart, ReasoningMessageStart, ReasoningMessageEnd, ToolCallStart, TextMessageStart,
		ToolCallEnd, ReasoningEnd, TextMessageEnd, StepFinished, RunFinished}
	if len(got) != len(want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v\nwant %v", got, want)
		}
	}
}

func TestStreamConcurrentEmitters(t *testing.T) {
	var rec Recorder
	s := NewStream(&rec, "t", "r")
	s.Emit(Event{Type: RunStarted})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				s.Emit(Event{Type: Custom, Name: "x"})
			}
		}()
	}
	wg.Wait()
	s.Emit(Event{Type: RunFinished})
	if n := len(rec.Events()); n != 802 {
		t.Fatalf("events = %d", n)
	}
}

func TestReserveStep(t *testing.T) {
	var rec Recorder
	s := NewStream(&rec, "t", "r")
	a := s.ReserveStep("validate")
	b := s.ReserveStep("validate")
	s.Emit(Event{Type: StepStarted, StepName: a})
	s.Emit(Event{Type: StepStarted, StepName: b})
	c := s.ReserveStep("validate")
	if a != "validate" || b != "validate (2)" || c != "validate (3)" {
		t.Fatalf("%q %q %q", a, b, c)
	}
	s.Emit(Event{Type: StepFinished, StepName: a})
	if d := s.ReserveStep("validate"); d != "validate" {
		t.Fatalf("released name not reused: %q", d)
	}
}

func TestNestedAttribution(t *testing.T) {
	var rec Recorder
	top := NewStream(&rec, "t", "run-top")
	top.Emit(Event{Type: RunStarted})
	top.Emit(Event{Type: ToolCallStart, ToolCallID: "call_0", ToolCallName: "reviewer"})
	l1 := NewStream(&Nested{Parent: top, RunID: "sub1", Name: "reviewer", ParentToolCallID: "call_0"}, "t", "sub1")
	l1.Emit(Event{Type: RunStarted})
	l1.Emit(Event{Type: ToolCallStart, ToolCallID: "call_0", ToolCallName: "helper"})
	l2 := NewStream(&Nested{Parent: l1, RunID: "sub2", Name: "helper", ParentToolCallID: "call_0"}, "t", "sub2")
	l2.Emit(Event{Type: RunStarted})
	l2.Emit(Event{Type: TextMessageStart, MessageID: "m2", Role: "assistant"})
	l2.Emit(Event{Type: RunFinished})
	l1.Emit(Event{Type: ToolCallEnd, ToolCallID: "call_0"})
	l1.Emit(Event{Type: RunError, Message: "failed", Code: "x"})
	evs := rec.Events()
	want := []struct {
		ty                         Type
		sub, parentSub, parentTool string
		toolCall                   string
	}{
		{RunStarted, "", "", "", ""},
		{ToolCallStart, "", "", "", "call_0"},
		{SubagentStarted, "sub1", "", "call_0", ""},
		{ToolCallStart, "sub1", "", "", "sub1:call_0"},
		{SubagentStarted, "sub2", "sub1", "sub1:call_0", ""},
		{TextMessageStart, "sub2", "", "", ""},
		{TextMessageEnd, "sub2", "", "", ""}, // closed by l2's stream before its RUN_FINISHED
		{SubagentFinished, "sub2", "", "", ""},
		{ToolCallEnd, "sub1", "", "", "sub1:call_0"},
		{SubagentError, "sub1", "", "", ""},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %v", rec.Types())
	}
	for i, w := range want {
		e := evs[i]
		if e.Type != w.ty || e.SubagentRunID != w.sub || e.ParentSubagentRunID != w.parentSub || e.ParentToolCallID != w.parentTool || e.ToolCallID != w.toolCall {
			t.Fatalf("event %d: %+v\nwant %+v", i, e, w)
		}
	}
}
