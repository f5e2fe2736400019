package events

import (
	"slices"
	"strconv"
	"sync"
)

// Stream is the one writer of a run's events. Producers running in
// parallel (the LLM stream, concurrent tool calls, sub-agents) all emit
// through it; it serialises them, stamps timestamps and run ids, and keeps
// the run's contract whatever the producers do:
//
//   - exactly one terminal event (RUN_FINISHED or RUN_ERROR), and nothing
//     after it;
//   - before RUN_FINISHED, anything still open (text and reasoning messages,
//     tool calls, steps) is closed, so the stream always verifies;
//   - a run that pauses (RUN_FINISHED, outcome interrupt) also closes its
//     sub-agents' steps and the sub-agents themselves (SUBAGENT_FINISHED,
//     outcome suspended), and says what it closed (Suspended) so that the
//     stream of the resumed run can open them again (Reopen).
//
// A Stream is a Sink, so it can be handed to anything that emits.
type Stream struct {
	mu       sync.Mutex
	out      Sink
	threadID string
	runID    string
	done     bool
	dropped  int

	// What is open, in opening order (few at a time: slices, not maps).
	text      []string
	spans     []string // reasoning spans
	reasoning []string // reasoning messages
	toolCalls []string
	reserved  map[string]bool
	// Steps (the run's own and its sub-agents') and sub-agents, as their
	// STEP_STARTED and SUBAGENT_STARTED: what a finish closes and a pause
	// suspends.
	opened    []Event
	suspended []Event
}

// StepNamer is implemented by sinks that hand out step names unique among
// the steps currently open (events.Stream). AG-UI refuses a STEP_STARTED
// whose name is already open, and parallel tool calls running the same
// chain run nodes of the same name.
type StepNamer interface {
	ReserveStep(base string) string
}

// ReserveStep returns base, or base with a number appended, such that no
// open or reserved step has that name. The name is released when its
// STEP_FINISHED is emitted.
func (s *Stream) ReserveStep(base string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserved == nil {
		s.reserved = map[string]bool{}
	}
	name := base
	for n := 2; s.reserved[name] || s.ownStepOpen(name); n++ {
		name = base + " (" + strconv.Itoa(n) + ")"
	}
	s.reserved[name] = true
	return name
}

// NewStream returns the stream of run runID in thread threadID, writing to out.
func NewStream(out Sink, threadID, runID string) *Stream {
	if out == nil {
		out = Discard
	}
	return &Stream{out: out, threadID: threadID, runID: runID}
}

// ThreadID returns the run's thread id.
func (s *Stream) ThreadID() string { return s.threadID }

// RunID returns the run's id.
func (s *Stream) RunID() string { return s.runID }

// Emit implements Sink.
func (s *Stream) Emit(e Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		s.dropped++
		return
	}
	if e.Timestamp == 0 {
		e.Timestamp = Now()
	}
	switch e.Type {
	case RunStarted, RunFinished:
		if e.ThreadID == "" {
			e.ThreadID = s.threadID
		}
		if e.RunID == "" {
			e.RunID = s.runID
		}
	}
	if e.Type == RunFinished {
		if e.Outcome == OutcomeInterrupt {
			s.suspend(e.Timestamp, e.Interrupts)
		}
		s.closeOpen(e.Timestamp)
	}
	s.track(&e)
	s.out.Emit(e)
	if e.Type.Terminal() {
		s.done = true
	}
}

// Done reports whether the terminal event has been emitted.
func (s *Stream) Done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// Dropped counts events emitted after the terminal event (and dropped).
func (s *Stream) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *Stream) track(e *Event) {
	s.trackOpened(e)
	// Attributed (sub-agent) events belong to the nested run's own
	// bookkeeping; the parent stream only tracks its own.
	if e.SubagentRunID != "" {
		return
	}
	switch e.Type {
	case TextMessageStart:
		s.text = append(s.text, e.MessageID)
	case TextMessageEnd:
		s.text = remove(s.text, e.MessageID)
	case ReasoningStart:
		s.spans = append(s.spans, e.MessageID)
	case ReasoningEnd:
		s.spans = remove(s.spans, e.MessageID)
	case ReasoningMessageStart:
		s.reasoning = append(s.reasoning, e.MessageID)
	case ReasoningMessageEnd:
		s.reasoning = remove(s.reasoning, e.MessageID)
	case ToolCallStart:
		s.toolCalls = append(s.toolCalls, e.ToolCallID)
	case ToolCallEnd:
		s.toolCalls = remove(s.toolCalls, e.ToolCallID)
	case StepFinished:
		delete(s.reserved, e.StepName)
	}
}

// closeOpen closes whatever is still open, innermost first.
func (s *Stream) closeOpen(ts int64) {
	for _, id := range s.toolCalls {
		s.out.Emit(Event{Type: ToolCallEnd, Timestamp: ts, ToolCallID: id})
	}
	for _, id := range s.reasoning {
		s.out.Emit(Event{Type: ReasoningMessageEnd, Timestamp: ts, MessageID: id})
	}
	for _, id := range s.spans {
		s.out.Emit(Event{Type: ReasoningEnd, Timestamp: ts, MessageID: id})
	}
	for _, id := range s.text {
		s.out.Emit(Event{Type: TextMessageEnd, Timestamp: ts, MessageID: id})
	}
	for i := len(s.opened) - 1; i >= 0; i-- {
		if o := &s.opened[i]; o.Type == StepStarted && o.SubagentRunID == "" {
			s.out.Emit(Event{Type: StepFinished, Timestamp: ts, StepName: o.StepName})
		}
	}
	s.toolCalls, s.reasoning, s.spans, s.text, s.opened = nil, nil, nil, nil, nil
}

func remove(ids []string, id string) []string {
	if i := slices.Index(ids, id); i >= 0 {
		return slices.Delete(ids, i, i+1)
	}
	return ids
}
