package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/server/identity"
)

// catalogEntry is one chain in list_rule_chains: its catalog entry and, when
// the chain is offered as a tool, the tool's name.
type catalogEntry struct {
	ChainInfo
	Tool string `json:"tool,omitempty"`
}

// publishCatalog publishes the built-in tools that read and deploy chains.
func (c *chainTools) publishCatalog() {
	yes, no := true, false
	c.host.setTool(toolDef{Name: ToolListChains, ReadOnly: &yes, Destructive: &no, OpenWorld: &no,
		Description: "Lists the deployed rule chains: id, name, description, whether each is an agent, and the MCP tool that runs it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		func(context.Context, ToolCall) ToolOutcome { return c.listChains() })
	c.host.setTool(toolDef{Name: ToolGetChain, ReadOnly: &yes, Destructive: &no, OpenWorld: &no,
		Description: "Returns a deployed rule chain's definition (its DSL JSON).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The chain id, as list_rule_chains gives it."}},"required":["id"]}`)},
		func(_ context.Context, call ToolCall) ToolOutcome { return c.getChain(call.Args) })
	if c.store.ReadOnly() {
		return
	}
	c.host.setTool(toolDef{Name: ToolSaveChain, Destructive: &yes, OpenWorld: &no,
		Description: "Validates a rule chain and hot-deploys it, replacing the chain with the same id; then saves it to the chains folder. " +
			"An invalid chain is refused with every error found, and the chain already deployed keeps running.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"id":{"type":"string","description":"The chain id; may be left out when the DSL has ruleChain.id."},` +
			`"dsl":{"type":["object","string"],"description":"The chain DSL: {\"ruleChain\":{...},\"metadata\":{\"nodes\":[...],\"connections\":[...]}}, as an object or a JSON string."}},` +
			`"required":["dsl"]}`)},
		func(ctx context.Context, call ToolCall) ToolOutcome { return c.saveChain(ctx, call.Args) })
}

func (c *chainTools) listChains() ToolOutcome {
	chains := []catalogEntry{}
	for _, info := range c.store.List() {
		e := catalogEntry{ChainInfo: info}
		e.Tool, _ = c.toolOf(info.ID)
		chains = append(chains, e)
	}
	return structuredOutcome(map[string]any{"chains": chains})
}

func (c *chainTools) getChain(args json.RawMessage) ToolOutcome {
	var in struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil || in.ID == "" {
		return errorOutcome(`"id" is required: the chain id, as list_rule_chains gives it`)
	}
	dsl, ok := c.store.DSL(in.ID)
	if !ok {
		return errorOutcome(fmt.Sprintf("no chain %q is deployed; list_rule_chains lists them", in.ID))
	}
	return textOutcome(string(dsl))
}

func (c *chainTools) saveChain(ctx context.Context, args json.RawMessage) ToolOutcome {
	// Deploying is an operator's action, whether the caller is an MCP
	// client or an agent running for one (its call through "self"
	// carries its caller).
	if err := identity.RequireOperator(identity.From(ctx), "deploying a chain (save_rule_chain)"); err != nil {
		return errorOutcome(err.Error())
	}
	var in struct {
		ID  string          `json:"id"`
		DSL json.RawMessage `json:"dsl"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return errorOutcome("the arguments are not {id, dsl}: " + err.Error())
	}
	dsl := bytes.TrimSpace(in.DSL)
	if len(dsl) > 0 && dsl[0] == '"' {
		var text string
		if err := json.Unmarshal(dsl, &text); err != nil {
			return errorOutcome("dsl: " + err.Error())
		}
		dsl = []byte(text)
	} else if len(dsl) > 0 && !bytes.Contains(dsl, []byte("\n")) {
		// An object from a model arrives on one line; the chains folder
		// is read by people too.
		var b bytes.Buffer
		if json.Indent(&b, dsl, "", "  ") == nil {
			dsl = b.Bytes()
		}
	}
	if len(dsl) == 0 || string(dsl) == "null" {
		return errorOutcome(`"dsl" is required: the chain's JSON`)
	}
	info, err := c.store.SaveFrom(ctx, in.ID, dsl)
	var invalid *InvalidChainError
	switch {
	case errors.As(err, &invalid):
		out := structuredOutcome(map[string]any{"id": invalid.ID, "errors": invalid.Problems})
		out.IsError = true
		out.Text = invalid.Error() + "\nThe chain was not deployed; what ran before still runs."
		return out
	case err != nil:
		return errorOutcome(err.Error())
	}
	e := catalogEntry{ChainInfo: info}
	e.Tool, _ = c.toolOf(info.ID)
	out := structuredOutcome(e)
	where := "deployed"
	if f, ok := c.store.File(info.ID); ok {
		where = "deployed and saved to " + f
	}
	out.Text = fmt.Sprintf("Chain %q %s.", info.ID, where) + "\n" + out.Text
	return out
}
