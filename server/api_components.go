package server

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/endpoint"
	"github.com/tidwall/sjson"

	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
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

// discoverTimeout bounds POST /api/v1/tools/mcp/discover.
const discoverTimeout = 20 * time.Second

// discoveredTool is one tool an MCP server offers, as the agent would see it.
type discoveredTool struct {
	Name string `json:"name"`
	// RemoteName is the tool's own name on the server (what an entry's
	// tools filter matches).
	RemoteName  string          `json:"remoteName"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// discoverMCP answers POST /api/v1/tools/mcp/discover: the body is one mcp
// entry of a tools array; the answer lists the tools the agent would get
// from it (after its filter), connecting exactly as the agent would.
func (s *Store) discoverMCP(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		writeError(w, http.StatusBadRequest, "the body is not a tools-array entry: "+err.Error())
		return
	}
	if probe.Type == "" {
		body, _ = sjson.SetBytes(body, "type", tools.TypeMCP)
	} else if probe.Type != tools.TypeMCP {
		writeError(w, http.StatusBadRequest, `discover lists the tools of an entry of type "mcp", not `+quote(probe.Type))
		return
	}
	// Connect now, and fail with the reason, rather than start empty and
	// connect in the background as an agent does.
	body, _ = sjson.SetBytes(body, "config.required", true)
	specs, err := tools.ParseSpecs(append(append([]byte{'['}, body...), ']'))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), discoverTimeout)
	defer cancel()
	set, err := tools.Build(ctx, specs, tools.BuildEnv{WorkDir: "workspace",
		Providers: map[string]tools.Provider{tools.TypeMCP: mcptool.NewProvider(mcptool.Options{Self: s.mcp})}})
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error())
		return
	}
	defer set.Close()
	out := []discoveredTool{}
	for _, name := range set.Names() {
		if e := set.Lookup(name); e != nil {
			d := discoveredTool{Name: e.Info.Name, Description: e.Info.Description, InputSchema: e.Info.Parameters}
			if r, ok := e.Tool.(interface{ RemoteName() string }); ok {
				d.RemoteName = r.RemoteName()
			}
			out = append(out, d)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}
