package tools

import "context"

// AgentRef names an agent node: the chain and the node id.
type AgentRef struct {
	ChainID string
	NodeID  string
}

// agentPath is the list of agent runs a call is made within, innermost
// first; each run adds one link, so nothing is copied.
type agentPath struct {
	AgentRef
	outer *agentPath
}

type agentPathKey struct{}

// WithAgent returns ctx recording that a run of agent a is in progress:
// what an agent's tools do, through sub-agents, chain tools and the self
// MCP server, happens within it. A chain saved during that time may hold
// no more power than each agent of the path (see ruleagent's
// save_rule_chain).
func WithAgent(ctx context.Context, a AgentRef) context.Context {
	outer, _ := ctx.Value(agentPathKey{}).(*agentPath)
	return context.WithValue(ctx, agentPathKey{}, &agentPath{AgentRef: a, outer: outer})
}

// AgentsFrom lists the agent runs ctx is within, innermost first; nil
// outside any.
func AgentsFrom(ctx context.Context) []AgentRef {
	var out []AgentRef
	for p, _ := ctx.Value(agentPathKey{}).(*agentPath); p != nil; p = p.outer {
		out = append(out, p.AgentRef)
	}
	return out
}

// WithAgentsOf returns ctx carrying the agent runs from is within: for a
// call handed to a context that does not derive from the caller's (the
// in-process MCP transport).
func WithAgentsOf(ctx, from context.Context) context.Context {
	if p, ok := from.Value(agentPathKey{}).(*agentPath); ok {
		return context.WithValue(ctx, agentPathKey{}, p)
	}
	return ctx
}

type onBehalfKey struct{}

// WithOnBehalfOf returns ctx recording whom the calls made within it act
// for: a host's verified caller (for ruleagent's server, an
// identity.Principal), opaque to tools. In-process hops that start from a
// context of their own (the self MCP transport) keep it, so that what an
// agent does through them is judged as its caller's doing.
func WithOnBehalfOf(ctx context.Context, who any) context.Context {
	return context.WithValue(ctx, onBehalfKey{}, who)
}

// OnBehalfOf returns what WithOnBehalfOf recorded in ctx, or nil.
func OnBehalfOf(ctx context.Context) any { return ctx.Value(onBehalfKey{}) }
