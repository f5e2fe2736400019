package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// ErrResume refuses a resume: an unknown or expired interrupt, answers
// that do not cover every open interrupt, a bad payload.
var ErrResume = errors.New("cannot resume")

// ResumeEntry answers one interrupt (AG-UI's resume entry).
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"` // resolved or cancelled
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// approvalPayload is a resolved approval interrupt's payload.
type approvalPayload struct {
	Approved  *bool           `json:"approved"`
	Reason    string          `json:"reason"`
	Arguments json.RawMessage `json:"arguments"`
	Always    bool            `json:"always"`
}

// Resume answers the interrupts a paused run waits for and goes on with
// it, its events reaching sink as AG-UI run threadID, runID (empty ones:
// the paused run's own), until it ends or pauses again. The answers must
// cover every interrupt the run's last segment ended on.
func (s *Store) Resume(ctx context.Context, entries []ResumeEntry, sink events.Sink, threadID, runID string) (RunResult, error) {
	st, answers, err := s.resumeAnswers(entries)
	if err != nil {
		return RunResult{}, err
	}
	return s.continueRun(ctx, st, answers, sink, threadID, runID)
}

// continueRun delivers checked answers and attaches the next segment.
func (s *Store) continueRun(ctx context.Context, st *runState, answers map[*interrupt]answer, sink events.Sink, threadID, runID string) (RunResult, error) {
	if threadID == "" {
		threadID = st.req.ThreadID
	}
	if runID == "" {
		runID = st.req.RunID
	}
	seg := st.attach(sink, threadID, runID, func() {
		for in, a := range answers {
			delete(st.open, in.ev.ID)
			in.answer <- a
		}
		st.reg.SetInterrupts(st.openList())
	})
	return st.wait(ctx, seg)
}

// resumeAnswers checks resume entries and turns them into answers.
func (s *Store) resumeAnswers(entries []ResumeEntry) (*runState, map[*interrupt]answer, error) {
	if len(entries) == 0 {
		return nil, nil, fmt.Errorf("%w: no resume entries", ErrResume)
	}
	var st *runState
	for _, e := range entries {
		found, ok := s.interrupts.find(e.InterruptID)
		if !ok {
			return nil, nil, fmt.Errorf("%w: interrupt %q is not open (unknown, already answered, or expired)", ErrResume, e.InterruptID)
		}
		if st != nil && found != st {
			return nil, nil, fmt.Errorf("%w: the interrupts belong to different runs", ErrResume)
		}
		st = found
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	answers := map[*interrupt]answer{}
	for _, e := range entries {
		in, ok := st.open[e.InterruptID]
		if !ok {
			return nil, nil, fmt.Errorf("%w: interrupt %q was not told to a client yet, or is answered", ErrResume, e.InterruptID)
		}
		if _, dup := answers[in]; dup {
			return nil, nil, fmt.Errorf("%w: interrupt %q is answered twice", ErrResume, e.InterruptID)
		}
		a, err := decide(in, e)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: interrupt %q: %v", ErrResume, e.InterruptID, err)
		}
		answers[in] = a
	}
	var missing []string
	for id, in := range st.open {
		if _, ok := answers[in]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("%w: every open interrupt needs an answer; missing %s", ErrResume, strings.Join(missing, ", "))
	}
	return st, answers, nil
}

// decide turns a resume entry into an answer for its interrupt.
func decide(in *interrupt, e ResumeEntry) (answer, error) {
	switch e.Status {
	case "cancelled":
		return answer{decision: tools.ApprovalDecision{Reason: "the person cancelled the request"}}, nil
	case "resolved":
	default:
		return answer{}, fmt.Errorf(`status must be "resolved" or "cancelled", not %q`, e.Status)
	}
	if len(in.req.ResponseSchema) > 0 {
		schema, err := tools.CompileSchema(in.req.ResponseSchema)
		if err != nil {
			return answer{}, fmt.Errorf("the tool's response schema: %v", err)
		}
		if err := schema.Validate(e.Payload); err != nil {
			return answer{}, fmt.Errorf("the answer does not match the form: %v", err)
		}
		return answer{decision: tools.ApprovalDecision{Approved: true, Answer: e.Payload}}, nil
	}
	var p approvalPayload
	if err := json.Unmarshal(e.Payload, &p); err != nil || p.Approved == nil {
		return answer{}, errors.New(`the payload must be {"approved": true|false, "reason"?, "arguments"?, "always"?}`)
	}
	d := tools.ApprovalDecision{Approved: *p.Approved, Reason: p.Reason}
	if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
		d.Args = p.Arguments
	}
	return answer{decision: d, always: p.Always}, nil
}

// splitResume separates the entries that answer an open interrupt from the
// ids of those that do not.
func (s *Store) splitResume(entries []ResumeEntry) (known []ResumeEntry, unknown []string) {
	for _, e := range entries {
		if _, ok := s.interrupts.find(e.InterruptID); ok {
			known = append(known, e)
		} else {
			unknown = append(unknown, e.InterruptID)
		}
	}
	return known, unknown
}
