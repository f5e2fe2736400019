// Package chaintool makes rule chains into tools: the rulechain tool type
// (any chain, its message data in and its end data out) and the agent tool
// type (another agent chain as a sub-agent, streaming its run nested in the
// caller's). It reaches the rule engine only through tools.ChainInvoker.
package chaintool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ruleagent/ruleagent/tools"
)

// DefaultMaxDepth bounds how deep chain tools may nest (A calls B calls C).
const DefaultMaxDepth = 3

// Options configure a Provider.
type Options struct {
	// Invoker runs the chains.
	Invoker tools.ChainInvoker
	// ChainID is the chain the calling agent belongs to: the root of the
	// call path, for cycle detection.
	ChainID string
	// MaxDepth bounds nesting; 0 means DefaultMaxDepth.
	MaxDepth int
}

// Provider builds rulechain and agent tools. One Provider serves one agent
// node.
type Provider struct {
	o Options

	mu     sync.Mutex
	agents []*agentSlot
}

// agentSlot remembers an agent tool so it can be rebuilt when its target
// chain is deployed or redeployed.
type agentSlot struct {
	spec    tools.Spec
	refresh func([]tools.Tool) error
	version uint64
	known   bool
}

// NewProvider returns a provider over o.Invoker.
func NewProvider(o Options) *Provider {
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return &Provider{o: o}
}

// Build implements tools.Provider for the rulechain and agent types.
func (p *Provider) Build(_ context.Context, spec tools.Spec, env tools.BuildEnv) ([]tools.Tool, error) {
	if p.o.Invoker == nil {
		return nil, &tools.ConfigError{Path: "type", Msg: spec.Type + " tools need a rule engine to run chains"}
	}
	if spec.TargetID == p.o.ChainID && p.o.ChainID != "" {
		return nil, &tools.ConfigError{Path: "targetId", Msg: fmt.Sprintf("%q is this agent's own chain: an agent cannot call itself", spec.TargetID)}
	}
	binds, err := parseBinds(spec.Bind)
	if err != nil {
		return nil, err
	}
	switch spec.Type {
	case tools.TypeRuleChain:
		info, err := chainInfo(spec, binds)
		if err != nil {
			return nil, err
		}
		return []tools.Tool{&chainTool{p: p, spec: spec, info: info, binds: binds}}, nil
	case tools.TypeAgent:
		desc, known := p.o.Invoker.Describe(spec.TargetID)
		t, err := p.agentTool(spec, binds, desc, known)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.agents = append(p.agents, &agentSlot{spec: spec, refresh: env.Refresh, version: desc.Version, known: known})
		p.mu.Unlock()
		return []tools.Tool{t}, nil
	}
	return nil, &tools.ConfigError{Path: "type", Msg: "chaintool builds rulechain and agent tools only"}
}

// RefreshAgents rebuilds the agent tools whose target chain changed since
// they were built: a target that was not deployed yet, or was redeployed
// with a new name, description or input schema. The agent node calls it
// before each run, so chains can load in any order.
func (p *Provider) RefreshAgents() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.agents {
		desc, known := p.o.Invoker.Describe(s.spec.TargetID)
		if known == s.known && (!known || desc.Version == s.version) {
			continue
		}
		binds, _ := parseBinds(s.spec.Bind)
		t, err := p.agentTool(s.spec, binds, desc, known)
		if err != nil || s.refresh == nil || s.refresh([]tools.Tool{t}) != nil {
			// Keep the previous tool; the change is retried next run.
			continue
		}
		s.version, s.known = desc.Version, known
	}
}

// defaultParams is the schema of a rulechain tool that gives none: any
// object, passed to the chain as its message data.
var defaultParams = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":true}`)

func chainInfo(spec tools.Spec, binds []binding) (tools.Info, error) {
	params := spec.Parameters
	if len(params) == 0 {
		params = defaultParams
	}
	params, err := hideBound(params, binds)
	if err != nil {
		return tools.Info{}, err
	}
	desc := spec.Description
	if desc == "" {
		desc = fmt.Sprintf("Runs the %s rule chain with the arguments as its input, and returns its output.", spec.TargetID)
	}
	return tools.Info{Name: spec.Name, Description: desc, Parameters: params}, nil
}
