package components

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools"
)

// chainInvoker implements tools.ChainInvoker on a RuleGo engine pool: the
// pool of the chain the agent node belongs to.
type chainInvoker struct {
	pool types.RuleEnginePool
}

// Describe implements tools.ChainInvoker.
func (c *chainInvoker) Describe(id string) (tools.ChainDesc, bool) {
	e, ok := c.pool.Get(id)
	if !ok || e == nil {
		return tools.ChainDesc{ID: id}, false
	}
	def := e.Definition()
	d := tools.ChainDesc{ID: id, Name: def.RuleChain.Name, Disabled: def.RuleChain.Disabled}
	if s, ok := def.RuleChain.AdditionalInfo["description"].(string); ok {
		d.Description = s
	}
	switch v := def.RuleChain.AdditionalInfo["inputSchema"].(type) {
	case string:
		if json.Valid([]byte(v)) {
			d.InputSchema = json.RawMessage(v)
		}
	case map[string]any:
		d.InputSchema, _ = json.Marshal(v)
	}
	h := fnv.New64a()
	for _, s := range []string{d.Name, d.Description, string(d.InputSchema)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if d.Disabled {
		h.Write([]byte{1})
	}
	d.Version = h.Sum64()
	return d, true
}

// Invoke implements tools.ChainInvoker.
func (c *chainInvoker) Invoke(ctx context.Context, req tools.ChainRequest) (tools.ChainResult, error) {
	e, ok := c.pool.Get(req.ChainID)
	if !ok || e == nil {
		// Checked before anything runs: RuleGo's TellFlow would send the
		// caller to Failure and never answer.
		return tools.ChainResult{}, tools.Errorf(tools.ErrNotFound, "no chain %q is deployed", req.ChainID)
	}
	def := e.Definition()
	if def.RuleChain.Disabled {
		return tools.ChainResult{}, tools.Errorf(tools.ErrNotFound, "chain %q is disabled", req.ChainID)
	}
	md := types.NewMetadata()
	for k, v := range req.Metadata {
		md.PutValue(k, v)
	}
	msg := types.NewMsg(0, "TOOL_CALL", types.JSON, md, req.Data)
	var resume *Suspension
	if req.Resume != nil {
		// The call's chain run paused before: it goes on from there.
		s, err := DecodeSuspension(req.Resume.State)
		if err != nil {
			return tools.ChainResult{}, tools.Wrap(tools.ErrExecutionFailed, err, "chain %s cannot be resumed", req.ChainID)
		}
		if s.ChainID != req.ChainID {
			return tools.ChainResult{}, tools.Errorf(tools.ErrExecutionFailed, "chain %s cannot resume a run of chain %s", req.ChainID, s.ChainID)
		}
		resume, msg = s, s.Message()
	}
	// What the call resumes is its own: the chain's calls start afresh.
	ctx = tools.WithChainResume(ctx, nil)

	scrubOut := chainScrubber(e)
	var sink events.Sink = events.Discard
	if req.Sink != nil {
		sink = scrubbingSink{next: req.Sink, scrub: scrubOut}
	}
	steps := req.Steps
	if steps == nil {
		steps = sink
	}
	o := ChainRunOptions{Sink: sink, Steps: steps, ToolCallID: req.ToolCallID, ChainID: req.ChainID, Resume: resume}
	if TraceFrom(ctx) {
		o.Options = []types.RuleContextOption{types.WithDebugMode(true)}
	}
	// The run's context derives from ctx: the calling run's tool-policy
	// restrictions (policy.WithRestrictions, set by the tool wrapper)
	// travel in it to every agent node of the chain.
	run := StartChain(telemetry.NodesUnder(withoutRunContext(ctx)), e, msg, o)
	if run.Wait(ctx) != nil {
		// Stopped: cancelled, waited for, and silenced.
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tools.ChainResult{}, tools.Wrap(tools.ErrTimeout, ctx.Err(), "chain %s was stopped", req.ChainID)
		}
		return tools.ChainResult{}, tools.Wrap(tools.ErrExecutionFailed, context.Cause(ctx), "chain %s was cancelled", req.ChainID)
	}
	switch s, err := run.Suspended(); {
	case err != nil:
		return tools.ChainResult{}, tools.Wrap(tools.ErrExecutionFailed, err, "chain %s", req.ChainID)
	case s != nil:
		// An agent of the chain paused: so does this call, holding it.
		return tools.ChainResult{}, chainPause(s)
	}
	var outs []tools.ChainOutput
	for _, end := range run.Ends() {
		if end.Failed() {
			return tools.ChainResult{}, chainFailure(req.ChainID, end.Msg, end.Err, scrubOut)
		}
		outs = append(outs, tools.ChainOutput{NodeID: end.NodeID, Data: scrubOut(end.Msg.GetData())})
	}
	return tools.ChainResult{Outputs: outs}, nil
}

// chainFailure is the tool error of a chain that ended in Failure: the
// chain's own error message, and its errorCode when an agent set one.
func chainFailure(id string, m types.RuleMsg, err error, scrubOut func(string) string) error {
	msg := ""
	if err != nil {
		msg = err.Error()
	} else if m.Metadata != nil {
		msg = m.Metadata.GetValue("errorMsg")
	}
	if msg == "" {
		msg = "it ended in Failure"
	}
	msg = scrubOut(msg)
	if m.Metadata != nil {
		if code := m.Metadata.GetValue("errorCode"); code != "" {
			return tools.Errorf(tools.ErrExecutionFailed, "chain %s failed (%s): %s", id, code, msg)
		}
	}
	return tools.Errorf(tools.ErrExecutionFailed, "chain %s failed: %s", id, msg)
}

type traceKey struct{}

// WithTrace returns ctx asking for RuleGo's node trace (debug mode) of the
// chains a run calls as tools, so that a live view (the server's WebSocket)
// sees their nodes too.
func WithTrace(ctx context.Context) context.Context { return context.WithValue(ctx, traceKey{}, true) }

// TraceFrom reports whether ctx asks for the node trace.
func TraceFrom(ctx context.Context) bool {
	v, _ := ctx.Value(traceKey{}).(bool)
	return v
}
