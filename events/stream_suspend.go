package events

import "slices"

// What a paused run leaves open and its resumed run opens again. AG-UI
// allows no RUN_FINISHED while a step or a sub-agent is active, and a run
// paused for interrupts is an AG-UI run that finishes; the work goes on in
// the next run, whose STEP_FINISHED and sub-agent events need their
// openers again.

// trackOpened keeps the STEP_STARTED and SUBAGENT_STARTED of what is open,
// the run's own and its sub-agents'.
func (s *Stream) trackOpened(e *Event) {
	switch e.Type {
	case StepStarted:
		s.opened = append(s.opened, Event{Type: StepStarted, StepName: e.StepName, SubagentRunID: e.SubagentRunID, Meta: e.Meta})
	case StepFinished:
		for i := len(s.opened) - 1; i >= 0; i-- {
			o := &s.opened[i]
			if o.Type == StepStarted && o.StepName == e.StepName && o.SubagentRunID == e.SubagentRunID {
				s.opened = slices.Delete(s.opened, i, i+1)
				break
			}
		}
	case SubagentStarted:
		s.opened = append(s.opened, Event{Type: SubagentStarted, SubagentRunID: e.SubagentRunID, Name: e.Name,
			Description: e.Description, ParentSubagentRunID: e.ParentSubagentRunID,
			ParentToolCallID: e.ParentToolCallID, ParentMessageID: e.ParentMessageID})
	case SubagentFinished, SubagentError:
		// The sub-agent's own stream closed what it opened.
		s.opened = slices.DeleteFunc(s.opened, func(o Event) bool { return o.SubagentRunID == e.SubagentRunID })
	}
}

// suspend closes, innermost first, the steps and sub-agents still open
// when the run pauses on interrupts: a sub-agent ends with outcome
// suspended, naming the interrupts raised in it or below it. The run's
// own steps are then closed by closeOpen, as at any finish.
func (s *Stream) suspend(ts int64, ins []Interrupt) {
	s.suspended = slices.Clone(s.opened)
	for i := len(s.opened) - 1; i >= 0; i-- {
		o := s.opened[i]
		switch {
		case o.Type == SubagentStarted:
			s.out.Emit(Event{Type: SubagentFinished, Timestamp: ts, SubagentRunID: o.SubagentRunID,
				Outcome: OutcomeSuspended, Interrupts: interruptsUnder(o.SubagentRunID, s.opened, ins)})
		case o.SubagentRunID != "":
			s.out.Emit(Event{Type: StepFinished, Timestamp: ts, StepName: o.StepName, SubagentRunID: o.SubagentRunID, Meta: o.Meta})
		}
	}
	// The run's own steps are left for closeOpen.
	s.opened = slices.DeleteFunc(s.opened, func(o Event) bool { return o.Type == SubagentStarted || o.SubagentRunID != "" })
}

// ownStepOpen reports whether the run's own step name is open.
func (s *Stream) ownStepOpen(name string) bool {
	return slices.ContainsFunc(s.opened, func(o Event) bool {
		return o.Type == StepStarted && o.SubagentRunID == "" && o.StepName == name
	})
}

// interruptsUnder are the interrupts raised by sub-agent id or by a
// sub-agent below it (ids only).
func interruptsUnder(id string, opened []Event, ins []Interrupt) []Interrupt {
	parent := map[string]string{}
	for _, o := range opened {
		if o.Type == SubagentStarted {
			parent[o.SubagentRunID] = o.ParentSubagentRunID
		}
	}
	var out []Interrupt
	for _, in := range ins {
		for at, hops := in.SubagentRunID, 0; at != "" && hops <= len(parent); at, hops = parent[at], hops+1 {
			if at == id {
				out = append(out, Interrupt{ID: in.ID})
				break
			}
		}
	}
	return out
}

// Suspended returns what the pause (RUN_FINISHED, outcome interrupt)
// closed, as the events that opened it: the resumed run's stream takes
// them in Reopen.
func (s *Stream) Suspended() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.suspended
}

// Reopen opens again, after this stream's RUN_STARTED, the steps and
// sub-agents a paused run's stream suspended, in their order.
func (s *Stream) Reopen(opened []Event) {
	for _, e := range opened {
		s.Emit(e)
	}
}

// Opened returns what is open now (the run's steps, its sub-agents and
// their steps), as the events that opened them: what a pause now would
// suspend.
func (s *Stream) Opened() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.opened)
}
