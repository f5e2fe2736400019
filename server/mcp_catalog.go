package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// catalogEntry is one chain in list_rule_chains: its catalog entry and, when
// the chain is offered as a tool, the tool's name.
type catalogEntry struct {
	ChainInfo
	Tool string `json:"tool,omitempty"`
}

// catalogTools are the built-in tools that read and deploy chains.
func catalogTools(s *Store) []mcpserver.ServerTool {
	list := mcp.NewTool(toolListChains,
		mcp.WithDescription("Lists the deployed rule chains: id, name, description, whether each is an agent, and the MCP tool that runs it."),
		mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false))
	get := mcp.NewTool(toolGetChain,
		mcp.WithDescription("Returns a deployed rule chain's definition (its DSL JSON)."),
		mcp.WithString("id", mcp.Required(), mcp.Description("The chain id, as list_rule_chains gives it.")),
		mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false), mcp.WithOpenWorldHintAnnotation(false))
	save := mcp.NewToolWithRawSchema(toolSaveChain,
		"Validates a rule chain and hot-deploys it, replacing the chain with the same id; then saves it to the chains folder. "+
			"An invalid chain is refused with every error found, and the chain already deployed keeps running.",
		json.RawMessage(`{"type":"object","properties":{`+
			`"id":{"type":"string","description":"The chain id; may be left out when the DSL has ruleChain.id."},`+
			`"dsl":{"type":["object","string"],"description":"The chain DSL: {\"ruleChain\":{...},\"metadata\":{\"nodes\":[...],\"connections\":[...]}}, as an object or a JSON string."}},`+
			`"required":["dsl"]}`))
	save.Annotations.DestructiveHint = mcp.ToBoolPtr(true)
	save.Annotations.OpenWorldHint = mcp.ToBoolPtr(false)
	return []mcpserver.ServerTool{
		{Tool: list, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return listChains(s), nil
		}},
		{Tool: get, Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return getChain(s, req), nil
		}},
		{Tool: save, Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return saveChain(s, req), nil
		}},
	}
}

func listChains(s *Store) *mcp.CallToolResult {
	chains := []catalogEntry{}
	for _, info := range s.List() {
		e := catalogEntry{ChainInfo: info}
		if exposes(info) {
			e.Tool = ToolName(info.ID)
		}
		chains = append(chains, e)
	}
	return structured(map[string]any{"chains": chains})
}

func getChain(s *Store, req mcp.CallToolRequest) *mcp.CallToolResult {
	id, err := req.RequireString("id")
	if err != nil {
		return mcp.NewToolResultError(err.Error())
	}
	dsl, ok := s.DSL(id)
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("no chain %q is deployed; list_rule_chains lists them", id))
	}
	return mcp.NewToolResultText(string(dsl))
}

func saveChain(s *Store, req mcp.CallToolRequest) *mcp.CallToolResult {
	var in struct {
		ID  string          `json:"id"`
		DSL json.RawMessage `json:"dsl"`
	}
	if err := req.BindArguments(&in); err != nil {
		return mcp.NewToolResultError("the arguments are not {id, dsl}: " + err.Error())
	}
	dsl := bytes.TrimSpace(in.DSL)
	if len(dsl) > 0 && dsl[0] == '"' {
		var text string
		if err := json.Unmarshal(dsl, &text); err != nil {
			return mcp.NewToolResultError("dsl: " + err.Error())
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
		return mcp.NewToolResultError(`"dsl" is required: the chain's JSON`)
	}
	info, err := s.Save(in.ID, dsl)
	var invalid *InvalidChainError
	switch {
	case errors.As(err, &invalid):
		out := structured(map[string]any{"id": invalid.ID, "errors": invalid.Problems})
		out.IsError = true
		out.Content = []mcp.Content{mcp.NewTextContent(invalid.Error() + "\nThe chain was not deployed; what ran before still runs.")}
		return out
	case err != nil:
		return mcp.NewToolResultError(err.Error())
	}
	e := catalogEntry{ChainInfo: info}
	if exposes(info) {
		e.Tool = ToolName(info.ID)
	}
	out := structured(e)
	where := "deployed"
	if f, ok := s.File(info.ID); ok {
		where = "deployed and saved to " + f
	}
	out.Content = append([]mcp.Content{mcp.NewTextContent(fmt.Sprintf("Chain %q %s.", info.ID, where))}, out.Content...)
	return out
}

// structured is a result carrying v both as structured content and as its
// JSON text, for clients that read only text.
func structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return mcp.NewToolResultError(err.Error())
	}
	return mcp.NewToolResultStructured(v, strings.TrimSpace(string(b)))
}
