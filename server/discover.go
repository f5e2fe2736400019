package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/sjson"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/tools"
	mcptool "github.com/ruleagent/ruleagent/tools/mcp"
	"github.com/ruleagent/ruleagent/tools/sandbox"
)

// DefaultDiscoverTimeout bounds POST /api/v1/tools/mcp/discover.
const DefaultDiscoverTimeout = 20 * time.Second

// discoveredTool is one tool an MCP server offers, as the agent would see it.
type discoveredTool struct {
	Name string `json:"name"`
	// RemoteName is the tool's own name on the server (what an entry's
	// tools filter matches).
	RemoteName  string          `json:"remoteName"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// discoverAPI serves POST /api/v1/tools/mcp/discover.
type discoverAPI struct {
	s       *Store
	timeout time.Duration
}

// discover answers POST /api/v1/tools/mcp/discover: the body is one mcp
// entry of a tools array; the answer lists the tools the agent would get
// from it. It connects to the server, and for a stdio entry starts a
// process: an operator's action, refused on a read-only server for stdio,
// and the process runs under the operator's sandbox floor (discoverEntry),
// for at most the timeout.
func (a discoverAPI) discover(w http.ResponseWriter, r *http.Request) {
	if !operatorOnly(w, r, "discovering an MCP server's tools") {
		return
	}
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
	if status, err := a.s.discoverEntry(&specs[0]); err != nil {
		writeError(w, status, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
	defer cancel()
	set, err := tools.Build(ctx, specs, tools.BuildEnv{WorkDir: "workspace",
		Providers: map[string]tools.Provider{tools.TypeMCP: mcptool.NewProvider(mcptool.Options{Self: a.s.mcp.Server()})}})
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("%w (discover gives a server %s to start and answer)", err, a.timeout)
		}
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

// discoverEntry decides how a discover may start the process of a stdio
// entry: never on a read-only server (403), and otherwise confined at
// least at the operator's sandbox floor, as a stdio server with a
// "sandbox" object of the floor's mode is (its own object's other
// settings, and a stronger mode, stay). The floor binds a discover even
// where the operator lets chains go below it (--allow-sandbox-off): a
// discover is not a chain the operator deployed. Entries that start no
// process (HTTP servers, "self") pass as they are.
func (s *Store) discoverEntry(spec *tools.Spec) (int, error) {
	mode, starts, err := mcptool.SandboxMode(*spec)
	if err != nil {
		return http.StatusBadRequest, err
	}
	if !starts {
		return 0, nil
	}
	if s.readOnly {
		return http.StatusForbidden, fmt.Errorf("%w: discovering a stdio MCP server would start a process; discover "+
			"over HTTP, or on a server that is not read-only", ErrReadOnly)
	}
	floor := components.GovernanceOf(s.cfg).Sandbox.Mode
	if components.ModeRank(floor) <= components.ModeRank(mode) || floor == sandbox.Off {
		return 0, nil
	}
	cfg, err := sjson.SetBytes(spec.Config, "sandbox.mode", string(floor))
	if err != nil {
		return http.StatusBadRequest, err
	}
	spec.Config = cfg
	return 0, nil
}
