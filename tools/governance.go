package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// take counts one call against the session's hourly budget, or refuses it.
// A store that fails refuses too: the budget never opens by accident.
func (sc SessionCalls) take(ctx context.Context) error {
	if sc.PerHour <= 0 || sc.Store == nil {
		return nil
	}
	used, ok, err := sc.Store.Take(ctx, sc.Key, sc.PerHour, time.Hour)
	if err != nil {
		return Wrap(ErrExecutionFailed, err, "the session's tool-call budget (limits.%s) cannot be checked, so the call was not made", limits.ToolCallsPerHour)
	}
	if !ok {
		return limits.Hit(limits.ToolCallsPerHour, int64(sc.PerHour), int64(used),
			"this session has made %d tool calls in the last hour, its limit (limits.%s); answer with what you have, or try again later",
			used, limits.ToolCallsPerHour)
	}
	return nil
}

// approvalRecorder passes a call's approval to the run's approver, and
// keeps the person's decision for the call's audit record.
type approvalRecorder struct {
	Approver
	dec *audit.Decision
}

// recordApproval returns ctx whose approver, if it has one, writes the
// decision it gets into dec.
func recordApproval(ctx context.Context, dec *audit.Decision) context.Context {
	a := ApproverFrom(ctx)
	if a == nil {
		return ctx
	}
	return WithApprover(ctx, &approvalRecorder{Approver: a, dec: dec})
}

func (a *approvalRecorder) Approve(ctx context.Context, req ApprovalRequest) (ApprovalDecision, error) {
	d, err := a.Approver.Approve(ctx, req)
	rec := audit.Decision{Effect: string(policy.Deny), Layer: audit.LayerPerson, Rule: "deny", Reason: d.Reason, Commands: req.Commands}
	switch {
	case err != nil:
		rec.Rule, rec.Reason = "unanswered", err.Error()
	case !d.Approved:
	case len(req.ResponseSchema) > 0:
		rec.Effect, rec.Rule = string(policy.Allow), "answer"
	case len(d.Args) > 0 && !bytes.Equal(d.Args, req.Args):
		rec.Effect, rec.Rule = string(policy.Allow), "edit"
	case d.Remembered:
		rec.Effect, rec.Rule = string(policy.Allow), "always"
	default:
		rec.Effect, rec.Rule = string(policy.Allow), "approve"
	}
	*a.dec = rec
	return d, err
}

// auditCall is the audit record of one call: who made it, the policy's
// decision and a person's (appr, when one was asked), the arguments that
// ran (scrubbed with the run's scrubber), and how it ended.
func auditCall(r *Run, e *Entry, c Call, args json.RawMessage, dec *policy.Decision, appr *audit.Decision, out *Outcome, rewritten bool) audit.Record {
	pt := &r.Point
	rec := audit.Record{Kind: audit.KindToolCall, RunID: pt.RunID, ParentRunID: r.ParentRunID, ThreadID: pt.ThreadID,
		SessionKey: r.SessionKey, UserID: pt.UserID, ChainID: pt.ChainID, NodeID: pt.NodeID, ToolCallID: c.ID, Tool: c.Name,
		ArgsRewritten: rewritten, DurationMs: out.Duration.Milliseconds()}
	text := string(args)
	if r.Scrubber != nil {
		// The tool name and the call id are the model's words too.
		text = r.Scrubber.Scrub(text)
		rec.Tool, rec.ToolCallID = r.Scrubber.Scrub(rec.Tool), r.Scrubber.Scrub(rec.ToolCallID)
	}
	rec.Args = audit.Args(text)
	if e != nil {
		rec.ToolType, rec.TargetID = e.Type, e.TargetID
		rec.Decision = &audit.Decision{Effect: string(dec.Effect), Layer: dec.Layer, Rule: dec.Rule, Match: dec.Match, Inherited: dec.Inherited}
	}
	if appr.Effect == "" && errors.Is(out.Err, ErrApprovalDenied) {
		// Denied before anyone was asked: no approver for this run.
		*appr = audit.Decision{Effect: string(policy.Deny), Layer: audit.LayerPerson, Rule: "unavailable"}
	}
	if appr.Effect != "" {
		if r.Scrubber != nil {
			appr.Reason = r.Scrubber.Scrub(appr.Reason)
			if len(appr.Commands) > 0 {
				cmds := make([]string, len(appr.Commands))
				for i, c := range appr.Commands {
					cmds[i] = r.Scrubber.Scrub(c)
				}
				appr.Commands = cmds
			}
		}
		rec.Approval = appr
	}
	var ex *limits.Exceeded
	switch {
	case e != nil && !dec.Allowed(), errors.Is(out.Err, ErrApprovalDenied):
		rec.Outcome = audit.OutcomeDenied
	case errors.As(out.Err, &ex):
		rec.Outcome, rec.Limit, rec.Max, rec.Used = audit.OutcomeLimit, ex.Limit, ex.Max, ex.Used
	case out.IsError:
		rec.Outcome = audit.OutcomeError
	default:
		rec.Outcome = audit.OutcomeOK
	}
	if out.IsError {
		rec.ErrorKind, rec.Error = out.Kind, audit.ErrorText(out.Content)
	}
	return rec
}
