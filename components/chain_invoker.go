package components

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// cancelGrace is how long a cancelled chain run may take to stop: RuleGo
// checks for cancellation between nodes, so the running node finishes
// first (the agent node itself stops at once).
const cancelGrace = 5 * time.Second

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

	scrubOut := chainScrubber(e)
	var sink events.Sink = events.Discard
	if req.Sink != nil {
		sink = scrubbingSink{next: req.Sink, scrub: scrubOut}
	}
	names := map[string]string{}
	order := map[string]int{}
	for i, n := range def.Metadata.Nodes {
		names[n.Id], order[n.Id] = n.Name, i
	}
	steps := req.Steps
	if steps == nil {
		steps = sink
	}
	// cctx derives from ctx, never from a fresh context: the calling run's
	// tool-policy restrictions (policy.WithRestrictions, set by the tool
	// wrapper) travel in it to every agent node of the chain.
	cctx := events.WithSink(withoutRunContext(ctx), sink)
	cctx = withSteps(cctx, &stepRecorder{sink: steps, toolCallID: req.ToolCallID, chainID: req.ChainID, names: names})

	var (
		mu      sync.Mutex
		outs    []tools.ChainOutput
		failure error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		opts := []types.RuleContextOption{types.WithContext(cctx)}
		if TraceFrom(ctx) {
			opts = append(opts, types.WithDebugMode(true))
		}
		e.OnMsgAndWait(msg, append(opts, types.WithOnEnd(func(rc types.RuleContext, m types.RuleMsg, err error, rel string) {
			if rel == types.Stream {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil || rel == types.Failure {
				if failure == nil {
					failure = chainFailure(req.ChainID, m, err, scrubOut)
				}
				return
			}
			outs = append(outs, tools.ChainOutput{NodeID: rc.GetSelfId(), Data: scrubOut(m.GetData())})
		}))...)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		select {
		case <-done:
		case <-time.After(cancelGrace):
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tools.ChainResult{}, tools.Wrap(tools.ErrTimeout, ctx.Err(), "chain %s was stopped", req.ChainID)
		}
		return tools.ChainResult{}, tools.Wrap(tools.ErrExecutionFailed, context.Cause(ctx), "chain %s was cancelled", req.ChainID)
	}
	mu.Lock()
	defer mu.Unlock()
	if failure != nil {
		return tools.ChainResult{}, failure
	}
	slices.SortStableFunc(outs, func(a, b tools.ChainOutput) int { return order[a.NodeID] - order[b.NodeID] })
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
