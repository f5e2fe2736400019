package server

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// agentInputSchema is the input of an agent chain without
// additionalInfo.inputSchema. The call handler also accepts OpenAI
// "messages" in place of "message".
var agentInputSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"What to ask the agent."}},"required":["message"]}`)

// chainInputSchema is the input of a business chain without
// additionalInfo.inputSchema: any object, passed on as the message data.
var chainInputSchema = json.RawMessage(`{"type":"object","description":"The chain's input message, as JSON.","additionalProperties":true}`)

// chainTools keeps the MCP tools of a store's chains in step with the
// chains deployed.
type chainTools struct {
	store *Store
	srv   *mcpserver.MCPServer
	opts  MCPOptions

	mu      sync.Mutex
	byChain map[string]exposedChain // chain id -> its tool
	byName  map[string]string       // tool name -> chain id
}

// exposedChain is what a chain's tool was made from, to tell whether a
// reload changed it.
type exposedChain struct {
	name string
	tool []byte // the tool's JSON
	info ChainInfo
}

// exposes reports whether a chain is offered as an MCP tool.
func exposes(info ChainInfo) bool { return !info.Disabled && (info.IsAgent || info.MCP) }

// update brings chain id's tool in line with the chain: adds it, replaces
// it, or removes it. mcp-go tells the clients (tools/list_changed).
func (c *chainTools) update(id string) {
	info, deployed := c.describe(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, had := c.byChain[id]
	if !deployed || !exposes(info) {
		if had {
			c.remove(id, old)
		}
		return
	}
	if len(info.InputSchema) > 0 && !objectSchema(info.InputSchema) {
		c.opts.Logger.Warn(`mcp: additionalInfo.inputSchema is not an object schema ({"type":"object",...}); the default schema is used`, "chain", id)
		info.InputSchema = nil
	}
	tool := chainTool(info)
	wire, err := json.Marshal(tool)
	if err != nil {
		c.opts.Logger.Warn("mcp: chain not exposed", "chain", id, "err", err)
		return
	}
	if had && old.name == tool.Name && bytes.Equal(old.tool, wire) {
		c.byChain[id] = exposedChain{name: tool.Name, tool: wire, info: info}
		return
	}
	if owner, taken := c.byName[tool.Name]; taken && owner != id {
		c.opts.Logger.Warn("mcp: chain not exposed: its tool name is taken", "chain", id, "tool", tool.Name, "by", owner)
		return
	}
	if had && old.name != tool.Name {
		c.remove(id, old)
	}
	c.byChain[id] = exposedChain{name: tool.Name, tool: wire, info: info}
	c.byName[tool.Name] = id
	c.srv.AddTools(mcpserver.ServerTool{Tool: tool, Handler: c.call(id)})
}

// remove withdraws a chain's tool. The caller holds c.mu.
func (c *chainTools) remove(id string, old exposedChain) {
	delete(c.byChain, id)
	delete(c.byName, old.name)
	c.srv.DeleteTools(old.name)
}

// describe reads the catalog entry of a deployed chain.
func (c *chainTools) describe(id string) (ChainInfo, bool) {
	dsl, ok := c.store.DSL(id)
	if !ok {
		return ChainInfo{}, false
	}
	info, err := Describe(dsl)
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
func chainTool(info ChainInfo) mcp.Tool {
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
	tool := mcp.NewToolWithRawSchema(ToolName(info.ID), desc, schema)
	tool.Title = info.Name
	return tool
}
