package events

import (
	"encoding/json"
	"strings"
	"testing"
)

// A pause closes the steps and sub-agents still open, innermost first,
// each sub-agent with outcome suspended naming the interrupts raised in or
// below it; the next run's stream opens them again in their order.
func TestStreamSuspendAndReopen(t *testing.T) {
	var first Recorder
	s := NewStream(&first, "t", "r1")
	for _, e := range []Event{
		{Type: RunStarted},
		{Type: StepStarted, StepName: "Agent"},
		{Type: SubagentStarted, SubagentRunID: "a", Name: "outer", ParentToolCallID: "c1"},
		{Type: StepStarted, StepName: "Lookup", SubagentRunID: "a"},
		{Type: SubagentStarted, SubagentRunID: "b", Name: "inner", ParentSubagentRunID: "a"},
		{Type: SubagentStarted, SubagentRunID: "c", Name: "done soon", ParentSubagentRunID: "a"},
		{Type: SubagentFinished, SubagentRunID: "c"},
		{Type: RunFinished, Outcome: OutcomeInterrupt, Interrupts: []Interrupt{{ID: "i1", SubagentRunID: "b"}, {ID: "i2"}}},
	} {
		s.Emit(e)
	}
	var got []string
	evs := first.Events()
	for _, e := range evs[7 : len(evs)-1] {
		b, _ := json.Marshal(map[string]any{"t": e.Type, "s": e.SubagentRunID, "n": e.StepName, "o": e.Outcome, "i": e.Interrupts})
		got = append(got, string(b))
	}
	want := []string{
		`{"i":[{"id":"i1","reason":""}],"n":"","o":"suspended","s":"b","t":"SUBAGENT_FINISHED"}`,
		`{"i":null,"n":"Lookup","o":"","s":"a","t":"STEP_FINISHED"}`,
		`{"i":[{"id":"i1","reason":""}],"n":"","o":"suspended","s":"a","t":"SUBAGENT_FINISHED"}`,
		`{"i":null,"n":"Agent","o":"","s":"","t":"STEP_FINISHED"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the pause closed:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var second Recorder
	s2 := NewStream(&second, "t", "r2")
	s2.Emit(Event{Type: RunStarted})
	s2.Reopen(s.Suspended())
	var order []string
	for _, e := range second.Events()[1:] {
		order = append(order, string(e.Type)+":"+e.SubagentRunID+e.StepName)
	}
	if strings.Join(order, " ") != "STEP_STARTED:Agent SUBAGENT_STARTED:a STEP_STARTED:aLookup SUBAGENT_STARTED:b" {
		t.Fatalf("reopened: %v", order)
	}
	if e := second.Events()[4]; e.Name != "inner" || e.ParentSubagentRunID != "a" {
		t.Errorf("a reopened sub-agent lost its identity: %+v", e)
	}
	// What was reopened closes as usual.
	s2.Emit(Event{Type: SubagentFinished, SubagentRunID: "b"})
	s2.Emit(Event{Type: StepFinished, StepName: "Lookup", SubagentRunID: "a"})
	s2.Emit(Event{Type: SubagentFinished, SubagentRunID: "a"})
	s2.Emit(Event{Type: StepFinished, StepName: "Agent"})
	s2.Emit(Event{Type: RunFinished})
	if n := len(second.Events()); n != 10 {
		t.Errorf("the resumed run: %d events, want 10 (nothing closed twice)", n)
	}
}
