package server

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/endpoint"

	"github.com/ruleagent/ruleagent/tools"
)

// BuiltinDoc describes a built-in tool for the editor and listings.
type BuiltinDoc struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	ConfigSchema json.RawMessage `json:"configSchema"`
	ArgsSchema   json.RawMessage `json:"argsSchema"`
}

// Components is the answer of GET /api/v1/components: everything an editor
// needs for its palette and forms.
type Components struct {
	// Nodes are RuleGo's component forms of every node type, core and
	// ruleagent's, sorted by category then type.
	Nodes []types.ComponentForm `json:"nodes"`
	// Endpoints are the forms of RuleGo's endpoint types.
	Endpoints []types.ComponentForm `json:"endpoints"`
	// ToolTypes are the four tool types of the tools array.
	ToolTypes []tools.TypeDoc `json:"toolTypes"`
	// Builtins are the built-in tools with their config and argument schemas.
	Builtins []BuiltinDoc `json:"builtins"`
}

// ComponentsCatalog lists the node types, endpoint types, tool types and
// built-in tools registered in this process.
func ComponentsCatalog() Components {
	c := Components{Nodes: sortedForms(rulego.Registry.GetComponentForms()),
		Endpoints: sortedForms(endpoint.Registry.GetComponentForms()), ToolTypes: tools.TypeDocs()}
	for _, d := range tools.Builtins.List() {
		c.Builtins = append(c.Builtins, BuiltinDoc{d.Name, d.Description, d.ConfigSchema, d.ArgsSchema})
	}
	return c
}

func sortedForms(list types.ComponentFormList) []types.ComponentForm {
	out := list.Values()
	slices.SortFunc(out, func(a, b types.ComponentForm) int {
		return cmp.Or(cmp.Compare(a.Category, b.Category), cmp.Compare(a.Type, b.Type))
	})
	return out
}

// serveComponents answers GET /api/v1/components.
func serveComponents(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, ComponentsCatalog())
}
