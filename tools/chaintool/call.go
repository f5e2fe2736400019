package chaintool

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// chainTool is a rulechain tool.
type chainTool struct {
	p     *Provider
	spec  tools.Spec
	info  tools.Info
	binds []binding
}

func (t *chainTool) Info() tools.Info { return t.info }

func (t *chainTool) Call(ctx context.Context, raw json.RawMessage) (tools.Result, error) {
	ci := tools.CallFrom(ctx)
	return t.p.invoke(ctx, raw, t.spec.TargetID, t.binds, false, func(data string) tools.ChainRequest {
		return tools.ChainRequest{Data: data, Metadata: childMetadata(ci, ""), Sink: runSink(ci), ToolCallID: toolCallID(ci)}
	})
}

// invoke is what both chain tool types do with a call: fill the bound
// arguments, check the call path, take a sub-agent slot when asked, and
// run the target chain with the request the tool type builds.
func (p *Provider) invoke(ctx context.Context, raw json.RawMessage, target string, binds []binding, subagent bool,
	request func(data string) tools.ChainRequest) (tools.Result, error) {
	ci := tools.CallFrom(ctx)
	data, err := p.arguments(raw, binds, ci)
	if err != nil {
		return tools.Result{}, err
	}
	ctx, err = p.enter(ctx, target)
	if err != nil {
		return tools.Result{}, err
	}
	if subagent && ci != nil && ci.Run != nil {
		release, err := ci.Run.AcquireSubagent(ctx)
		if err != nil {
			return tools.Result{}, tools.Wrap(tools.ErrTimeout, err, "waiting for a free sub-agent slot")
		}
		defer release()
	}
	req := request(data)
	req.ChainID = target
	// A call resumed after its run paused goes on with the chain run it
	// started (a paused sub-agent), once.
	req.Resume = tools.ChainResumeFrom(ctx)
	res, err := p.o.Invoker.Invoke(ctx, req)
	if err != nil {
		return tools.Result{}, err
	}
	return chainResult(res), nil
}

// arguments decodes the model's arguments and fills the bound ones.
func (p *Provider) arguments(raw json.RawMessage, binds []binding, ci *tools.CallInfo) (string, error) {
	args, err := decodeArgs(raw)
	if err != nil {
		return "", err
	}
	var bv *tools.BindValues
	if ci != nil && ci.Run != nil {
		bv = &ci.Run.Meta
	}
	if err := fill(args, binds, bv); err != nil {
		return "", err
	}
	b, err := json.Marshal(args)
	return string(b), err
}

// chainResult turns a chain's outputs into what the model reads: one end's
// data as it is; several ends as a JSON array of {node, data} in the order
// of the end nodes in the chain.
func chainResult(res tools.ChainResult) tools.Result {
	switch len(res.Outputs) {
	case 0:
		return tools.TextResult("(the chain finished without output)")
	case 1:
		return tools.TextResult(res.Outputs[0].Data)
	}
	b, _ := json.Marshal(res.Outputs)
	return tools.Result{Text: string(b), Structured: b}
}

// childMetadata is the metadata a chain run gets from its caller: the
// documented allowlist, plus where it was called from.
func childMetadata(ci *tools.CallInfo, runID string) map[string]string {
	md := map[string]string{}
	if ci == nil {
		return md
	}
	if ci.Run != nil {
		for _, k := range tools.PropagatedMetadata {
			if v, ok := ci.Run.Meta.Metadata[k]; ok {
				md[k] = v
			}
		}
	}
	if ci.RunID != "" {
		md["parentRunId"] = ci.RunID
	}
	if ci.ToolCallID != "" {
		md["parentToolCallId"] = ci.ToolCallID
	}
	if runID != "" {
		md["runId"] = runID
	}
	return md
}

func runSink(ci *tools.CallInfo) events.Sink {
	if s := ci.EventSink(); s != nil {
		return s
	}
	return events.Discard
}

func toolCallID(ci *tools.CallInfo) string {
	if ci == nil {
		return ""
	}
	return ci.ToolCallID
}

type pathKey struct{}

// enter checks that running target from here neither closes a cycle nor
// goes deeper than allowed, and returns the context carrying the longer
// call path.
func (p *Provider) enter(ctx context.Context, target string) (context.Context, error) {
	path, _ := ctx.Value(pathKey{}).([]string)
	if len(path) == 0 && p.o.ChainID != "" {
		path = []string{p.o.ChainID}
	}
	if slices.Contains(path, target) {
		return ctx, tools.Errorf(tools.ErrPolicyDenied, "calling %s would make a cycle (%s -> %s); chains cannot call themselves through tools", target, strings.Join(path, " -> "), target)
	}
	if depth := len(path); depth > p.o.MaxDepth {
		return ctx, tools.Errorf(tools.ErrPolicyDenied, "calling %s would nest chain tools %d deep, over the limit of %d (%s)", target, depth, p.o.MaxDepth, strings.Join(path, " -> "))
	}
	next := append(slices.Clip(path), target)
	return context.WithValue(ctx, pathKey{}, next), nil
}
