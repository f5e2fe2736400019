package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// ErrResume refuses a resume: an unknown or expired interrupt, answers
// that do not cover every open interrupt, a bad payload.
var ErrResume = errors.New("cannot resume")

// ErrNotYours refuses to answer, cancel or show a run that another caller
// started (see RunRequest.Owner).
var ErrNotYours = errors.New("the run belongs to another caller")

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

// resumeScope is where an answer comes from: a run's own route (runID), or
// a thread of a chain (AG-UI), and the caller's verified user (empty for
// the operator, and when no verified identity is configured).
type resumeScope struct {
	runID, threadID, chainID string
	user                     string
}

// Resume answers the interrupts a paused run waits for and goes on with
// it, its events reaching sink as AG-UI run threadID, runID (empty ones:
// the paused run's own), until it ends or pauses again. The answers must
// cover every interrupt the run's last segment ended on.
func (s *Store) Resume(ctx context.Context, entries []ResumeEntry, sink events.Sink, threadID, runID string) (RunResult, error) {
	st, answers, err := s.resumeAnswers(entries, resumeScope{threadID: threadID})
	if err != nil {
		return RunResult{}, err
	}
	return s.continueRun(ctx, st, answers, sink, threadID, runID)
}

// continueRun delivers claimed answers and attaches the next segment.
func (s *Store) continueRun(ctx context.Context, st *runState, answers map[*interrupt]answer, sink events.Sink, threadID, runID string) (RunResult, error) {
	if threadID == "" {
		threadID = st.req.ThreadID
	}
	if runID == "" {
		runID = st.req.RunID
	}
	seg := st.attach(sink, threadID, runID, func() {
		for in, a := range answers {
			in.answer <- a
		}
	})
	return st.wait(ctx, seg)
}

// resumeAnswers checks resume entries, turns them into answers and claims
// them, in one step under the run's lock: the interrupts are no longer
// open once it returns, so a second answer to them (a replay, or a
// concurrent request) is refused, and exactly one request goes on with
// the run. The entries must answer interrupts raised on the scope's
// thread (or run), by the caller who started it.
func (s *Store) resumeAnswers(entries []ResumeEntry, sc resumeScope) (*runState, map[*interrupt]answer, error) {
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
	switch {
	case sc.user != "" && st.req.Owner != sc.user:
		return nil, nil, fmt.Errorf("%w: its interrupts can only be answered by the caller who started it", ErrNotYours)
	case sc.runID != "" && st.req.RunID != sc.runID:
		return nil, nil, fmt.Errorf("%w: the interrupts belong to run %q, not %q", ErrResume, st.req.RunID, sc.runID)
	case sc.threadID != "" && st.req.ThreadID != sc.threadID:
		return nil, nil, fmt.Errorf("%w: the interrupts were raised on another thread than %q: answer them on their own thread", ErrResume, sc.threadID)
	case sc.chainID != "" && st.req.ChainID != sc.chainID:
		return nil, nil, fmt.Errorf("%w: the interrupts belong to a run of another chain than %q", ErrResume, sc.chainID)
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
		slices.Sort(missing)
		return nil, nil, fmt.Errorf("%w: every open interrupt needs an answer; missing %s", ErrResume, strings.Join(missing, ", "))
	}
	// Claimed: from here on the answers are this request's to deliver.
	for in := range answers {
		delete(st.open, in.ev.ID)
	}
	st.reg.SetInterrupts(st.openList())
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
