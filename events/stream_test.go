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
