package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// Call is one tool call as the model made it.
type Call struct {
	// ID is the provider's tool-call id.
	ID   string
	Name string
	Args json.RawMessage
	// ParentMessageID is the assistant message that made the call.
	ParentMessageID string
	// Announced is true when TOOL_CALL_START, ARGS and END were already
	// emitted while the model streamed the call.
	Announced bool
	// Withdrawn is true when the tool was taken out of the turn's offer
	// (a BeforeLLM aspect narrowed it): the call is refused.
	Withdrawn bool
}

// Outcome is what a call produced, as the model will read it.
type Outcome struct {
	// Content is the tool message content.
	Content string
	// Result is the tool's full result (Parts and Structured included);
	// zero when the call failed or was refused.
	Result Result
	// Err is the error, nil on success. Its kind is in Kind.
	Err      error
	Kind     string
	IsError  bool
	Duration time.Duration
	// Paused is set, and nothing else but Duration, when the call waits
	// for an answer from outside the run (see Paused): it has no result
	// yet, and its TOOL_CALL_RESULT comes when it is resumed (Set.Resume).
	Paused *Paused
}

// Invoke runs one call through the VisualToolWrapper pipeline: validate the
// arguments, check the budget and the repeat guard, run the ToolCallBefore
// aspects (which may rewrite the arguments or refuse), announce the call,
// run it under its timeout with panic recovery, scrub and truncate the
// output, record metrics, run the ToolCallAfter aspects and emit the
// result. It never returns an error: failures and refusals become results
// the model can read, marked as errors in events and metrics.
func (s *Set) Invoke(ctx context.Context, r *Run, c Call) Outcome {
	start := time.Now()
	args := normaliseArgs(c.Args)
	ctx, e, meta, span, p, ac := s.startCall(ctx, r, c, args, events.Meta{})

	var (
		dec  policy.Decision
		appr *audit.Decision // a person's decision, kept for the audit log
	)
	res, err := s.guard(ctx, r, e, c, args, &p, ac, &meta, &dec)
	// A refused call is announced too: the model made it, and the client
	// shows it with its refusal. ARGS always carries the model's arguments.
	if !c.Announced {
		announce(r.Sink, c, meta)
	}
	if err == nil {
		if ac != nil {
			args = ac.Args
		}
		if r.Audit != nil {
			appr = new(audit.Decision)
		}
		// On a refusal the model's arguments stay what the audit records.
		res, args, err = s.approveAndRun(ctx, r, e, c, args, "", &p, ac, &meta, appr)
		if pz := pausedBy(err, args, meta.ArgsRewritten, appr); pz != nil {
			span.End(telemetry.ToolEnd{})
			return Outcome{Paused: pz, Duration: time.Since(start)}
		}
	}
	return s.finish(ctx, r, e, c, span, start, args, &p, ac, &meta, &dec, appr, res, err)
}

// startCall sets call c up as Invoke and Resume both do: its entry, the
// metadata of its events (meta, completed with the agent node that makes
// the call, whose chainId and nodeId tell apart agents of one chain that
// share a tool name, and the tool's type and target), its span, the
// aspects' point, and the aspects' view of the call when any aspect has a
// tool point.
func (s *Set) startCall(ctx context.Context, r *Run, c Call, args json.RawMessage, meta events.Meta) (context.Context, *Entry,
	events.Meta, telemetry.Tool, aspects.Point, *aspects.ToolCall) {
	e := s.Lookup(c.Name)
	meta.ChainID, meta.NodeID = r.Point.ChainID, r.Point.NodeID
	if e != nil {
		meta.ToolType, meta.TargetID = e.Type, e.TargetID
	}
	ctx, span := telemetry.StartTool(ctx, telemetry.ToolInfo{Name: c.Name, CallID: c.ID, Kind: meta.ToolType, Target: meta.TargetID})
	p := r.Point
	p.Tool = c.Name
	var ac *aspects.ToolCall
	if r.Aspects.HasToolPoints() {
		ac = &aspects.ToolCall{ID: c.ID, Name: c.Name, Args: args, ToolType: meta.ToolType, TargetID: meta.TargetID}
	}
	return ctx, e, meta, span, p, ac
}

// approveAndRun asks a person about the call when it needs one (resuming
// the answer to interrupt when it is set), then runs it: with the
// arguments a person edited, through the ToolCallBefore aspects again, or
// not at all when a form's answer is its result. It returns the arguments
// the call ran with.
func (s *Set) approveAndRun(ctx context.Context, r *Run, e *Entry, c Call, args json.RawMessage, interrupt string, p *aspects.Point,
	ac *aspects.ToolCall, meta *events.Meta, appr *audit.Decision) (Result, json.RawMessage, error) {
	actx := ctx
	if appr != nil {
		actx = recordApproval(ctx, appr)
	}
	res, approved, answered, err := s.approve(actx, r, e, c, args, interrupt)
	if err != nil {
		return res, args, err
	}
	if !bytes.Equal(args, approved) {
		// Arguments a person edited pass the ToolCallBefore aspects as
		// the model's did.
		meta.ArgsRewritten = true
		args = approved
		if ac != nil {
			ac.Args = args
			rewritten, err := aspectsBefore(ctx, r, e, p, ac, meta)
			if err != nil {
				return Result{}, args, err
			}
			args = rewritten
		}
	}
	if answered {
		return res, args, nil
	}
	res, err = execute(ctx, r, e, c, args)
	return res, args, err
}

// finish makes a call's outcome from its result or error: scrubbed, cut to
// size, counted, seen by the ToolCallAfter aspects, emitted as
// TOOL_CALL_RESULT and written to the audit log.
func (s *Set) finish(ctx context.Context, r *Run, e *Entry, c Call, span telemetry.Tool, start time.Time, args json.RawMessage,
	p *aspects.Point, ac *aspects.ToolCall, meta *events.Meta, dec *policy.Decision, appr *audit.Decision, res Result, err error) Outcome {
	out := Outcome{Result: res, Err: err, Duration: time.Since(start)}
	if err != nil {
		out.Kind = KindName(err)
		out.IsError = true
		out.Content = "Error (" + out.Kind + "): " + err.Error()
		out.Result = Result{}
	} else {
		out.Content = res.Text
		out.IsError = res.IsError
	}
	if r.Scrubber != nil {
		out.Content = r.Scrubber.Scrub(out.Content)
	}
	out.Content, meta.Truncated = truncate(out.Content, r.MaxOutput)
	if e != nil {
		e.record(out)
	}
	if ac != nil {
		tr := &aspects.ToolResult{Content: out.Content, IsError: out.IsError, ErrKind: out.Kind, Duration: out.Duration}
		if aerr := r.Aspects.ToolAfter(ctx, p, ac, tr); aerr != nil {
			tr.IsError, tr.ErrKind = true, KindName(aerr)
			tr.Content = "Error (" + tr.ErrKind + "): " + aerr.Error()
		}
		if tr.Content != out.Content {
			// A rewrite is a result like any other: scrubbed and cut.
			if r.Scrubber != nil {
				tr.Content = r.Scrubber.Scrub(tr.Content)
			}
			var cut bool
			tr.Content, cut = truncate(tr.Content, r.MaxOutput)
			meta.Truncated = meta.Truncated || cut
		}
		out.Content, out.IsError, out.Kind = tr.Content, tr.IsError, tr.ErrKind
	}
	meta.DurationMs = out.Duration.Milliseconds()
	meta.IsError = out.IsError
	meta.ErrorKind = out.Kind
	r.Sink.Emit(events.Event{Type: events.ToolCallResult, MessageID: r.nextID(), ToolCallID: c.ID, Content: out.Content, Meta: *meta})
	endSpan(span, r, args, &out, meta.Truncated)
	if r.Audit != nil {
		if appr == nil {
			appr = new(audit.Decision)
		}
		r.Audit.Record(auditCall(r, e, c, args, dec, appr, &out, meta.ArgsRewritten))
	}
	return out
}

// guard runs the checks before a call may run: the tool exists, the tool
// policies allow it (dec receives their decision), the arguments match its
// schema, the limits and the repeat guard allow it, and the ToolCallBefore
// aspects do not refuse it.
func (s *Set) guard(ctx context.Context, r *Run, e *Entry, c Call, args json.RawMessage, p *aspects.Point, ac *aspects.ToolCall, meta *events.Meta,
	dec *policy.Decision) (Result, error) {
	if c.Withdrawn {
		return Result{}, Errorf(ErrNotFound, "%s was not offered in this turn (withdrawn by an aspect)", c.Name)
	}
	if e == nil {
		// Only the tools the model may use are named: a denied tool is not
		// advertised here either.
		_, names := s.Offered(r)
		return Result{}, Errorf(ErrNotFound, "there is no tool named %q; available tools: %v", c.Name, names)
	}
	// A tool that was offered once may be denied now (the set or the
	// policy changed), and a model may call a tool it was never offered:
	// the policy is checked on every call, before anything else about it.
	if *dec = r.Policy.Decide(e.Ref); !dec.Allowed() {
		metrics.PolicyDenials.WithLabelValues(dec.Rule).Inc()
		return Result{}, dec.Err()
	}
	if err := e.schema.Validate(args); err != nil {
		return Result{}, err
	}
	if n := r.calls.Add(1); r.MaxCalls > 0 && int(n) > r.MaxCalls {
		return Result{}, limits.Hit(limits.MaxToolCalls, int64(r.MaxCalls), n,
			"the run's budget of %d tool calls is spent (maxToolCalls); answer with what you have", r.MaxCalls)
	}
	if r.RepeatLimit > 0 {
		if n := r.repeat(c.Name, args); n >= r.RepeatLimit {
			return Result{}, Errorf(ErrRepeatedCall, "%s was already called %d times with these exact arguments; repeating it will not give a different result. Change the arguments, try another approach, or answer with what you have", c.Name, n-1)
		}
	}
	if err := r.SessionCalls.take(ctx); err != nil {
		return Result{}, err
	}
	if ac != nil {
		if _, err := aspectsBefore(ctx, r, e, p, ac, meta); err != nil {
			return Result{}, err
		}
	}
	return Result{}, nil
}

// aspectsBefore runs the ToolCallBefore aspects on ac and returns the
// arguments the call runs with; a rewrite must still satisfy the schema.
func aspectsBefore(ctx context.Context, r *Run, e *Entry, p *aspects.Point, ac *aspects.ToolCall, meta *events.Meta) (json.RawMessage, error) {
	before := ac.Args
	if err := r.Aspects.ToolBefore(ctx, p, ac); err != nil {
		return nil, Wrap(ErrPolicyDenied, err, "the call was refused")
	}
	if !bytes.Equal(before, ac.Args) {
		meta.ArgsRewritten = true
		if err := e.schema.Validate(ac.Args); err != nil {
			return nil, fmt.Errorf("arguments rewritten by an aspect: %w", err)
		}
	}
	return ac.Args, nil
}

// execute runs the tool under its timeout, recovering a panic.
func execute(ctx context.Context, r *Run, e *Entry, c Call, args json.RawMessage) (res Result, err error) {
	if e.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.Timeout)
		defer cancel()
	}
	if r.Policy != nil {
		// Whatever the call runs (a rule chain, a sub-agent, an agent
		// behind the self MCP server) inherits the run's restrictions.
		ctx = policy.WithRestrictions(ctx, r.Policy.Nested())
	}
	ctx = WithCall(ctx, &CallInfo{RunID: r.Point.RunID, ThreadID: r.Point.ThreadID, ToolCallID: c.ID, ToolName: c.Name,
		ChainID: r.Point.ChainID, NodeID: r.Point.NodeID, UserID: r.Point.UserID, Run: r})
	defer func() {
		if v := recover(); v != nil {
			slog.Error("tool panicked", "tool", c.Name, "panic", v, "stack", string(debug.Stack()))
			res, err = Result{}, Errorf(ErrExecutionFailed, "the tool crashed (panic: %v)", v)
		}
	}()
	res, err = callTool(ctx, e, c, args)
	if err != nil && ctx.Err() == context.DeadlineExceeded && !errors.Is(err, ErrTimeout) {
		err = Wrap(ErrTimeout, err, "%s did not finish within %s", c.Name, e.Timeout)
	}
	return res, err
}

func announce(sink events.Sink, c Call, meta events.Meta) {
	sink.Emit(events.Event{Type: events.ToolCallStart, ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: c.ParentMessageID,
		Meta: events.Meta{ToolType: meta.ToolType, TargetID: meta.TargetID, ChainID: meta.ChainID, NodeID: meta.NodeID}})
	sink.Emit(events.Event{Type: events.ToolCallArgs, ToolCallID: c.ID, Delta: string(c.Args)})
	sink.Emit(events.Event{Type: events.ToolCallEnd, ToolCallID: c.ID})
}

// normaliseArgs treats empty arguments as an empty object: several models
// send "" for tools without parameters.
func normaliseArgs(a json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(a)) == 0 {
		return json.RawMessage("{}")
	}
	return a
}

func (e *Entry) record(o Outcome) {
	if o.IsError {
		e.metrics.failed.Inc()
	} else {
		e.metrics.ok.Inc()
	}
	e.metrics.duration.Observe(o.Duration.Seconds())
	e.metrics.bytes.Add(float64(len(o.Content)))
}

// truncate cuts s to at most max characters, keeping its head and tail
// (errors and summaries tend to sit at the end of long output) and saying
// what was cut.
func truncate(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s, false
	}
	headRunes := max * 2 / 3
	tailRunes := max - headRunes
	head := prefixRunes(s, headRunes)
	tail := suffixRunes(s, tailRunes)
	return fmt.Sprintf("%s\n\n[... output truncated: %d of %d characters omitted ...]\n\n%s", head, n-headRunes-tailRunes, n, tail), true
}

func prefixRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func suffixRunes(s string, n int) string {
	i := len(s)
	for n > 0 && i > 0 {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		n--
	}
	return s[i:]
}
