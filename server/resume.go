package server

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/server/runs"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/tools"
)

// ErrResume refuses a resume: an unknown or expired interrupt, answers
// that do not cover every open interrupt, a bad payload.
var ErrResume = errors.New("cannot resume")

// ErrNotYours refuses to answer, cancel or show a run that another caller
// started (see RunRequest.Owner).
var ErrNotYours = runs.ErrNotYours

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
// cover every interrupt the run waits for.
func (s *Store) Resume(ctx context.Context, entries []ResumeEntry, sink events.Sink, threadID, runID string) (RunResult, error) {
	r, err := s.claim(ctx, entries, resumeScope{threadID: threadID})
	if err != nil {
		return RunResult{}, err
	}
	if sink == nil {
		sink = events.Discard
	}
	return s.goOn(ctx, r, sink, threadID, runID)
}

// resumption is a claimed checkpoint: the run to go on with, and the
// answers to its interrupts.
type resumption struct {
	state   *checkpoint.State
	run     *components.Suspension
	answers map[string]answer
	// entries are the resume entries that gave the answers, and expired
	// the interrupts nobody answered in time: the run's record keeps both.
	entries []ResumeEntry
	expired []string
}

// RunID and Owner name the claimed run and who started it (an
// mcpserve.Claimed).
func (r *resumption) RunID() string { return r.state.RunID }
func (r *resumption) Owner() string { return r.state.Owner }

// claim checks resume entries against the paused run's checkpoint, turns
// them into answers and claims the checkpoint, in one step: once it
// returns, the checkpoint is gone, so a second answer to its interrupts
// (a replay, or a concurrent request, on any replica) is refused, and
// exactly one request goes on with the run. The entries must answer every
// interrupt the run waits for, raised on the scope's thread (or run) by
// the caller who started it. Interrupts that expired unanswered are
// denials, as they would have been by now.
func (s *Store) claim(ctx context.Context, entries []ResumeEntry, sc resumeScope) (*resumption, error) {
	return s.claimAnswers(ctx, entries, nil, sc)
}

// claimAnswers is claim, with interrupts answered as if they had expired
// unanswered (a denial each) besides the entries: a replay answers a
// pause as the recorded run's was.
func (s *Store) claimAnswers(ctx context.Context, entries []ResumeEntry, expiredIDs []string, sc resumeScope) (*resumption, error) {
	if len(entries) == 0 && len(expiredIDs) == 0 {
		return nil, fmt.Errorf("%w: no resume entries", ErrResume)
	}
	runID := ""
	ids := make([]string, 0, len(entries)+len(expiredIDs))
	for _, e := range entries {
		ids = append(ids, e.InterruptID)
	}
	ids = append(ids, expiredIDs...)
	for _, iid := range ids {
		id, ok := interruptRun(iid)
		switch {
		case !ok:
			return nil, notOpen(iid)
		case runID != "" && id != runID:
			return nil, fmt.Errorf("%w: the interrupts belong to different runs", ErrResume)
		}
		runID = id
	}
	cp, state, err := s.paused(ctx, runID)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, notOpen(ids[0])
	}
	if err != nil {
		return nil, err
	}
	switch {
	case sc.user != "" && state.Owner != sc.user:
		return nil, asUnknown(notOpen(ids[0]))
	case sc.runID != "" && state.RunID != sc.runID:
		return nil, fmt.Errorf("%w: the interrupts belong to run %q, not %q", ErrResume, state.RunID, sc.runID)
	case sc.threadID != "" && state.ThreadID != sc.threadID:
		return nil, fmt.Errorf("%w: the interrupts were raised on another thread than %q: answer them on their own thread", ErrResume, sc.threadID)
	case sc.chainID != "" && state.ChainID != sc.chainID:
		return nil, fmt.Errorf("%w: the interrupts belong to a run of another chain than %q", ErrResume, sc.chainID)
	}
	now := time.Now()
	answers := map[string]answer{}
	for _, e := range entries {
		p := state.Open(e.InterruptID)
		if p == nil {
			return nil, notOpen(e.InterruptID)
		}
		if _, dup := answers[e.InterruptID]; dup {
			return nil, fmt.Errorf("%w: interrupt %q is answered twice", ErrResume, e.InterruptID)
		}
		a, err := decide(p, e)
		if err != nil {
			return nil, fmt.Errorf("%w: interrupt %q: %v", ErrResume, e.InterruptID, err)
		}
		answers[e.InterruptID] = a
	}
	var missing []string
	expired := slices.Clone(expiredIDs)
	for _, id := range expiredIDs {
		p := state.Open(id)
		if p == nil {
			return nil, notOpen(id)
		}
		if _, dup := answers[id]; dup {
			return nil, fmt.Errorf("%w: interrupt %q is answered twice", ErrResume, id)
		}
		answers[id] = timedOut(p)
	}
	for i := range state.Pending {
		p := &state.Pending[i]
		if _, ok := answers[p.Interrupt.ID]; ok {
			continue
		}
		if now.Before(p.Expires) {
			missing = append(missing, p.Interrupt.ID)
		} else {
			answers[p.Interrupt.ID] = timedOut(p)
			expired = append(expired, p.Interrupt.ID)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%w: every open interrupt needs an answer; missing %s", ErrResume, strings.Join(missing, ", "))
	}
	r, err := s.take(ctx, cp, state, answers)
	if err != nil {
		return nil, err
	}
	r.entries, r.expired = entries, expired
	return r, nil
}

// notOpen refuses an answer to an interrupt nobody waits for.
func notOpen(id string) error {
	return fmt.Errorf("%w: interrupt %q is not open (unknown, already answered, or expired)", ErrResume, id)
}

// paused loads and decodes run runID's checkpoint.
func (s *Store) paused(ctx context.Context, runID string) (*checkpoint.Checkpoint, *checkpoint.State, error) {
	cp, err := s.checkpoints.Load(ctx, runID)
	if err != nil {
		if errors.Is(err, checkpoint.ErrNotFound) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%w: %v", errCheckpoints, err)
	}
	state, err := checkpoint.Decode(cp.Data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: run %s: %v", errCheckpoints, runID, err)
	}
	return cp, state, nil
}

// errCheckpoints is a checkpoint store that failed (503).
var errCheckpoints = checkpoint.ErrUnavailable

// take claims checkpoint cp (read as state) for this process and deletes
// it: from then on the run is this process's to go on with, and nobody
// else's. A checkpoint that changed since it was read (another answer
// went on with it, and it paused again) is given back.
func (s *Store) take(ctx context.Context, cp *checkpoint.Checkpoint, state *checkpoint.State, answers map[string]answer) (*resumption, error) {
	run, err := components.DecodeSuspension(state.Run)
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: %v", errCheckpoints, state.RunID, err)
	}
	if (state.Source == SourceFork || state.Source == SourceReplay) && s.plays.of(state.RunID) == nil {
		// Its recorded chains, its playback and its fork's model are in
		// the process that runs it: the deployed chain would go on in
		// their place.
		return nil, fmt.Errorf("%w: run %s is a %s of a recorded run: only the process that runs it can go on with it (it did not outlive that process)",
			ErrResume, state.RunID, state.Source)
	}
	if _, ok := s.runEngine(state.RunID, state.ChainID); !ok {
		return nil, fmt.Errorf("%w: the run's chain %q is not deployed", ErrResume, state.ChainID)
	}
	claimed, err := s.checkpoints.Claim(ctx, state.RunID, s.replica)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, fmt.Errorf("%w: the run's interrupts were answered already, or expired", ErrResume)
	case errors.Is(err, checkpoint.ErrClaimed):
		return nil, fmt.Errorf("%w: another answer to the run's interrupts is being taken", ErrResume)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", errCheckpoints, err)
	}
	if !bytes.Equal(claimed.Data, cp.Data) {
		_ = s.checkpoints.Release(ctx, state.RunID, claimed.Fence)
		return nil, fmt.Errorf("%w: the run went on and paused again meanwhile: answer its new interrupts", ErrResume)
	}
	if err := s.checkpoints.Delete(ctx, state.RunID, claimed.Fence); err != nil {
		return nil, fmt.Errorf("%w: the claim was lost: %v", ErrResume, err)
	}
	s.expiry.stop(state.RunID)
	return &resumption{state: state, run: run, answers: answers}, nil
}

// goOn goes on with a claimed run in this process, its events reaching
// sink as AG-UI run threadID, runID (empty ones: the run's own), until it
// ends or pauses again. A nil sink with no thread or run id goes on
// without a client (its interrupts expired): its events are kept for the
// next client, should it pause again.
func (s *Store) goOn(ctx context.Context, r *resumption, sink events.Sink, threadID, runID string) (RunResult, error) {
	state := r.state
	// The message the run started with names its user (the usage ledger
	// records the run under it).
	req := RunRequest{ChainID: state.ChainID, ThreadID: state.ThreadID, RunID: state.RunID, Source: state.Source, Owner: state.Owner,
		NewThread: state.NewThread, Caller: callerOf(state.Caller), Interruptible: true, Metadata: r.run.Msg.Metadata}
	res := RunResult{RunID: req.RunID, ThreadID: req.ThreadID}
	e, ok := s.runEngine(req.RunID, req.ChainID)
	if !ok {
		return res, fmt.Errorf("%w: %q", ErrNoChain, req.ChainID)
	}
	st := newRunState(s, req)
	st.started, st.resumed, st.answers = state.StartedAt, state, r.answers
	st.entries, st.expired = r.entries, r.expired
	st.reopen, st.held = checkpoint.AsEvents(state.Suspended), checkpoint.AsEvents(state.Held)
	st.ledger.Restore(ledgerEntries(state.Usage))
	s.interrupts.memory().restore(st.alwaysScope(), state.Always)
	if err := s.prepare(ctx, e, st, r.run); err != nil {
		return res, err
	}
	detached := sink == nil && threadID == "" && runID == ""
	var seg *segment
	if !detached {
		seg = st.attach(sink, cmp.Or(threadID, req.ThreadID), cmp.Or(runID, req.RunID))
	}
	st.run.Start(r.run.Message())
	if detached {
		return RunResult{RunID: req.RunID, ThreadID: req.ThreadID}, nil
	}
	return st.wait(ctx, seg)
}

// decide turns a resume entry into an answer for pending interrupt p.
func decide(p *checkpoint.Pending, e ResumeEntry) (answer, error) {
	switch e.Status {
	case "cancelled":
		return answer{decision: denial("the person cancelled the request")}, nil
	case "resolved":
	default:
		return answer{}, fmt.Errorf(`status must be "resolved" or "cancelled", not %q`, e.Status)
	}
	if len(p.ResponseSchema) > 0 {
		schema, err := tools.CompileSchema(p.ResponseSchema)
		if err != nil {
			return answer{}, fmt.Errorf("the tool's response schema: %v", err)
		}
		if err := schema.Validate(e.Payload); err != nil {
			return answer{}, fmt.Errorf("the answer does not match the form: %v", err)
		}
		return answer{decision: tools.ApprovalDecision{Approved: true, Answer: e.Payload}}, nil
	}
	var pl approvalPayload
	if err := json.Unmarshal(e.Payload, &pl); err != nil || pl.Approved == nil {
		return answer{}, errors.New(`the payload must be {"approved": true|false, "reason"?, "arguments"?, "always"?}`)
	}
	d := tools.ApprovalDecision{Approved: *pl.Approved, Reason: pl.Reason}
	if len(pl.Arguments) > 0 && string(pl.Arguments) != "null" {
		d.Args = pl.Arguments
	}
	return answer{decision: d, always: pl.Always}, nil
}

// denial is a decision not to run a call, saying why.
func denial(reason string) tools.ApprovalDecision { return tools.ApprovalDecision{Reason: reason} }

// splitResume separates the entries that answer an interrupt a paused run
// waits for from the ids of those that do not; for a verified user (user
// set), another caller's interrupts are among the latter.
func (s *Store) splitResume(ctx context.Context, entries []ResumeEntry, user string) (known []ResumeEntry, unknown []string) {
	states := map[string]*checkpoint.State{}
	for _, e := range entries {
		var state *checkpoint.State
		if runID, ok := interruptRun(e.InterruptID); ok {
			if st, seen := states[runID]; seen {
				state = st
			} else if _, st, err := s.paused(ctx, runID); err == nil && (user == "" || st.Owner == user) {
				// Another caller's interrupts are as unknown as ones
				// that never were.
				state, states[runID] = st, st
			}
		}
		if state.Open(e.InterruptID) != nil {
			known = append(known, e)
		} else {
			unknown = append(unknown, e.InterruptID)
		}
	}
	return known, unknown
}
