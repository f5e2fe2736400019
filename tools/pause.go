package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// A run can pause: a call waits for an answer from outside it (a person's
// approval, a form) without a goroutine waiting for it. The run's state is
// then saved (its caller decides where), and the run is resumed from it,
// in this process or another, once the answer is there.
//
//   - An Approver of a run that can pause raises an interrupt and returns
//     a *PauseError naming it; the wrapper returns the call's Outcome with
//     Paused set (no TOOL_CALL_RESULT, no audit record yet).
//   - A chain tool whose chain paused (a sub-agent's approval) returns a
//     *PauseError holding that chain run's state (ChainPause): the call
//     pauses too, holding it.
//   - Set.Resume goes on with a paused call: it asks the approver again,
//     naming the interrupt (ApprovalRequest.InterruptID), which answers it
//     from the answers the resume brought; or it runs the chain tool again
//     with its ChainPause in the context, and the chain goes on from
//     where it paused. The call then ends as any call does.
//
// A call's checks (policy, schema, limits, repeat guard, ToolCallBefore
// aspects) run once, before the pause; a call runs at most once: an
// approved call runs when its run is resumed, never before the pause.

// ErrPaused is the error of a call waiting for an answer from outside
// the run (errors.Is): see PauseError.
var ErrPaused = errors.New("the call waits for an answer")

// PauseError pauses a call: it waits for the answer to InterruptID, or
// for the chain run it started (Chain) to be resumed.
type PauseError struct {
	InterruptID string
	Chain       *ChainPause
}

func (e *PauseError) Error() string {
	if e.Chain != nil {
		return ErrPaused.Error() + ": the chain it runs paused"
	}
	return ErrPaused.Error() + ": interrupt " + e.InterruptID
}

func (e *PauseError) Unwrap() error { return ErrPaused }

// ChainPause is a chain run that paused inside a call.
type ChainPause struct {
	// RunID is the paused run's id (a sub-agent's subagentRunId).
	RunID string `json:"runId,omitempty"`
	// State is what the chain run needs to go on (package components
	// makes and reads it).
	State json.RawMessage `json:"state"`
}

// Paused is a call waiting for an answer: what Set.Resume needs to go on
// with it. It is plain data (JSON), saved with its run.
type Paused struct {
	// InterruptID is the interrupt whose answer decides the call.
	InterruptID string `json:"interruptId,omitempty"`
	// Chain is the paused run of the chain the call runs.
	Chain *ChainPause `json:"chain,omitempty"`
	// Args are the arguments the call runs with (the model's, as the
	// ToolCallBefore aspects left them, or as a person edited them).
	Args json.RawMessage `json:"args"`
	// ArgsRewritten: an aspect or a person changed the model's arguments.
	ArgsRewritten bool `json:"argsRewritten,omitempty"`
	// Approval is the person's decision on the call, when it was approved
	// before it paused (a sub-agent the person let run), for its audit
	// record.
	Approval *audit.Decision `json:"approval,omitempty"`
}

// pausedBy is the Paused of a call whose approval or run returned err,
// or nil when err does not pause it.
func pausedBy(err error, args json.RawMessage, rewritten bool, appr *audit.Decision) *Paused {
	var pe *PauseError
	if !errors.As(err, &pe) {
		return nil
	}
	pz := &Paused{InterruptID: pe.InterruptID, Chain: pe.Chain, Args: args, ArgsRewritten: rewritten}
	if pe.Chain != nil && appr != nil && appr.Effect != "" {
		d := *appr
		pz.Approval = &d
	}
	return pz
}

// Resume goes on with call c of run r, paused as pz: it asks for the
// answer to the interrupt the call paused on, or resumes the chain run the
// call started, and ends the call as Invoke does (its result, metrics,
// aspects, TOOL_CALL_RESULT and audit record). The call's checks ran
// before it paused; only the policy is asked again, since it may have
// changed meanwhile. The call may pause again.
func (s *Set) Resume(ctx context.Context, r *Run, c Call, pz Paused) Outcome {
	start := time.Now()
	args := pz.Args
	ctx, e, meta, span, p, ac := s.startCall(ctx, r, c, args, events.Meta{ArgsRewritten: pz.ArgsRewritten})
	var (
		dec  policy.Decision
		appr *audit.Decision
		res  Result
		err  error
	)
	if r.Audit != nil {
		appr = new(audit.Decision)
		if pz.Approval != nil {
			*appr = *pz.Approval
		}
	}
	if e != nil {
		dec = r.Policy.Decide(e.Ref)
	}
	switch {
	case e == nil:
		_, names := s.Offered(r)
		err = Errorf(ErrNotFound, "there is no tool named %q any more; available tools: %v", c.Name, names)
	case !dec.Allowed():
		metrics.PolicyDenials.WithLabelValues(dec.Rule).Inc()
		err = dec.Err()
	case pz.Chain != nil:
		res, err = execute(WithChainResume(ctx, pz.Chain), r, e, c, args)
	default:
		res, args, err = s.approveAndRun(ctx, r, e, c, args, pz.InterruptID, &p, ac, &meta, appr)
	}
	if again := pausedBy(err, args, meta.ArgsRewritten, appr); again != nil {
		span.End(telemetry.ToolEnd{})
		return Outcome{Paused: again, Duration: time.Since(start)}
	}
	return s.finish(ctx, r, e, c, span, start, args, &p, ac, &meta, &dec, appr, res, err)
}

type chainResumeKey struct{}

// WithChainResume returns ctx carrying the paused chain run a chain tool
// resumes instead of starting its chain afresh (nil: none).
func WithChainResume(ctx context.Context, cp *ChainPause) context.Context {
	return context.WithValue(ctx, chainResumeKey{}, cp)
}

// ChainResumeFrom returns the paused chain run ctx carries, or nil.
func ChainResumeFrom(ctx context.Context) *ChainPause {
	cp, _ := ctx.Value(chainResumeKey{}).(*ChainPause)
	return cp
}

// RunCounters are what a Run has counted so far (its calls, its result
// message ids, the repeat guard's calls), for a run that pauses and goes on
// elsewhere: the limits and the ids continue where they were.
type RunCounters struct {
	Calls int64 `json:"calls,omitempty"`
	IDs   int64 `json:"ids,omitempty"`
	// Repeats counts each exact call (tool and arguments) by its hash, in
	// hex.
	Repeats map[string]int32 `json:"repeats,omitempty"`
}

// Counters returns what r has counted.
func (r *Run) Counters() RunCounters {
	c := RunCounters{Calls: r.calls.Load(), IDs: r.ids.Load()}
	r.repeats.Range(func(k, v any) bool {
		if c.Repeats == nil {
			c.Repeats = map[string]int32{}
		}
		c.Repeats[strconv.FormatUint(k.(uint64), 16)] = v.(*atomic.Int32).Load()
		return true
	})
	return c
}

// SetCounters makes r go on counting from c (a Run not used yet).
func (r *Run) SetCounters(c RunCounters) {
	r.calls.Store(c.Calls)
	r.ids.Store(c.IDs)
	for k, n := range c.Repeats {
		h, err := strconv.ParseUint(k, 16, 64)
		if err != nil {
			continue
		}
		v := new(atomic.Int32)
		v.Store(n)
		r.repeats.Store(h, v)
	}
}
