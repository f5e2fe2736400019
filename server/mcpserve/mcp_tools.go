package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"

	"github.com/ruleagent/ruleagent/server/catalog"
)

// agentInputSchema is the input of an agent chain without
// additionalInfo.inputSchema. The call handler also accepts OpenAI
// "messages" in place of "message".
var agentInputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent."}},"required":["message"]}`)

// chainInputSchema is the input of a business chain without
// additionalInfo.inputSchema: any object, passed on as the message data.
var chainInputSchema = json.RawMessage(`{"type":"object","description":"The chain's input message, as JSON.","additionalProperties":true}`)

// chainTools keeps the MCP tools of a store's chains in step with the
// chains deployed, and runs them.
type chainTools struct {
	store   Host
	host    toolHost
	opts    Options
	waiting *waitingRuns
	tasks   *mcpTasks

	mu      sync.Mutex
	byChain map[string]exposedChain // chain id -> its tool
	byName  map[string]string       // tool name -> chain id
	// bound are the parameters other chains bind, by chain (see
	// boundParams); such chains are withheld, and logged once.
	bound    map[string][]string
	withheld map[string]bool
	// served: a transport offers the tools (Store.MCPHTTP, ServeStdio).
	// Until then, why a chain is not offered as it is is kept in untold,
	// by chain, not logged: a process that serves no MCP (ruleagent run)
	// has nothing to tell about it.
	served bool
	untold map[string][]exposureNote
}

// exposureNote is a log line about a chain's tool, kept until MCP is served.
type exposureNote struct {
	msg  string
	args []any
}

// exposedChain is what a chain's tool was made from, to tell whether a
// reload changed it.
type exposedChain struct {
	name string
	tool []byte // the tool's JSON
	info ChainInfo
}

// exposes reports whether a chain asks to be offered as an MCP tool.
func exposes(info ChainInfo) bool { return !info.Disabled && (info.IsAgent || info.MCP) }

// update brings chain id's tool in line with the chain: adds it, replaces
// it, or removes it; the host tells the clients (tools/list_changed). A
// change may bind or unbind the parameters of other chains, whose tools
// follow too.
func (c *chainTools) update(id string) {
	bound := boundParams(c.store)
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := []string{id}
	for chain := range bound {
		if !slices.Equal(bound[chain], c.bound[chain]) && !slices.Contains(ids, chain) {
			ids = append(ids, chain)
		}
	}
	for chain := range c.bound {
		if _, still := bound[chain]; !still && !slices.Contains(ids, chain) {
			ids = append(ids, chain)
		}
	}
	c.bound = bound
	for _, chain := range ids {
		c.updateLocked(chain)
	}
}

// updateLocked updates one chain's tool. The caller holds c.mu.
func (c *chainTools) updateLocked(id string) {
	info, deployed := c.describe(id)
	old, had := c.byChain[id]
	// What was untold of the chain's earlier version no longer holds.
	delete(c.untold, id)
	if !deployed || !exposes(info) || len(c.bound[id]) > 0 {
		switch {
		case !deployed || !exposes(info):
			delete(c.withheld, id)
		case !c.withheld[id] || !c.served:
			c.withheld[id] = true
			c.warn(id, "mcp: chain not exposed: other chains bind its parameters, and an MCP client would choose them", "chain", id, "bound", c.bound[id])
		}
		if had {
			c.remove(id, old)
		}
		return
	}
	delete(c.withheld, id)
	if len(info.InputSchema) > 0 && !objectSchema(info.InputSchema) {
		c.warn(id, `mcp: additionalInfo.inputSchema is not an object schema ({"type":"object",...}); the default schema is used`, "chain", id)
		info.InputSchema = nil
	}
	def := chainTool(info)
	wire, err := json.Marshal(def)
	if err != nil {
		c.warn(id, "mcp: chain not exposed", "chain", id, "err", err)
		return
	}
	if had && old.name == def.Name && bytes.Equal(old.tool, wire) {
		c.byChain[id] = exposedChain{name: def.Name, tool: wire, info: info}
		return
	}
	if owner, taken := c.byName[def.Name]; taken && owner != id {
		c.warn(id, "mcp: chain not exposed: its tool name is taken", "chain", id, "tool", def.Name, "by", owner)
		return
	}
	if had && old.name != def.Name {
		c.remove(id, old)
	}
	c.byChain[id] = exposedChain{name: def.Name, tool: wire, info: info}
	c.byName[def.Name] = id
	c.host.setTool(def, func(ctx context.Context, call ToolCall) ToolOutcome { return c.call(ctx, id, call) })
}

// warn logs what keeps chain id's tool from being offered as it is, once
// MCP is served; until then it keeps it for serving to tell. The caller
// holds c.mu.
func (c *chainTools) warn(id, msg string, args ...any) {
	if c.served {
		c.opts.Logger.Warn(msg, args...)
		return
	}
	c.untold[id] = append(c.untold[id], exposureNote{msg, args})
}

// serving is called by each transport as it starts to serve the tools:
// the first call logs what was kept untold, in chain order, and later
// decisions are logged as they are made.
func (c *chainTools) serving() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.served {
		return
	}
	c.served = true
	for _, id := range slices.Sorted(maps.Keys(c.untold)) {
		for _, n := range c.untold[id] {
			c.opts.Logger.Warn(n.msg, n.args...)
		}
	}
	c.untold = nil
}

// remove withdraws a chain's tool. The caller holds c.mu.
func (c *chainTools) remove(id string, old exposedChain) {
	delete(c.byChain, id)
	delete(c.byName, old.name)
	c.host.removeTool(old.name)
}

// toolOf is the name of chain id's tool, when it is offered.
func (c *chainTools) toolOf(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byChain[id]
	return e.name, ok
}

// describe reads the catalog entry of a deployed chain.
func (c *chainTools) describe(id string) (ChainInfo, bool) {
	dsl, ok := c.store.DSL(id)
	if !ok {
		return ChainInfo{}, false
	}
	info, err := catalog.Describe(dsl)
	if err != nil {
		return ChainInfo{}, false
	}
	info.ID = id
	return info, true
}

// objectSchema reports whether raw is a JSON Schema of an object, the only
// kind MCP allows as a tool's input: clients refuse a whole tools/list
// holding another.
func objectSchema(raw json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(raw, &s) == nil && s.Type == "object"
}

// chainTool is the MCP tool definition of a chain.
func chainTool(info ChainInfo) toolDef {
	desc := info.Description
	if desc == "" {
		desc = info.Name
	}
	if desc == "" {
		desc = "Runs rule chain " + info.ID + "."
	}
	schema := info.InputSchema
	switch {
	case len(schema) > 0:
	case info.IsAgent:
		schema = agentInputSchema
	default:
		schema = chainInputSchema
	}
	return toolDef{Name: ToolName(info.ID), Title: info.Name, Description: desc, InputSchema: schema}
}
