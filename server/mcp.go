package server

import (
	"log/slog"
	"runtime/debug"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// MCPOptions configure the MCP server over a store.
type MCPOptions struct {
	// Version is reported as serverInfo.version; the module's version
	// from the build information by default.
	Version string
	// Logger receives what the server cannot tell a client, such as a
	// chain whose tool name is taken. slog.Default() when nil.
	Logger *slog.Logger
	// TextProgressInterval is the least time between two progress
	// notifications about streamed text or reasoning (tool calls are
	// always reported). 250ms when zero.
	TextProgressInterval time.Duration
}

// defaultTextProgressInterval keeps a fast stream from flooding a client
// with notifications while still showing that the answer is being written.
const defaultTextProgressInterval = 250 * time.Millisecond

// NewMCPServer returns an MCP server exposing the store's chains as tools:
// every enabled agent chain, and every chain marked additionalInfo.mcp,
// named by ToolName, plus list_rule_chains, get_rule_chain and
// save_rule_chain. The chain tools follow the store: deploying, reloading
// or removing a chain updates them, and clients get tools/list_changed.
//
// A chain tool runs the chain with the call's arguments as input and
// answers with the chain's final message. A chain that fails answers
// isError with the error, never a protocol error. When the client asks for
// progress, the run's events become notifications/progress; when it
// cancels the call, the run is cancelled.
func NewMCPServer(s *Store, o MCPOptions) *mcpserver.MCPServer {
	if o.Version == "" {
		o.Version = moduleVersion()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TextProgressInterval <= 0 {
		o.TextProgressInterval = defaultTextProgressInterval
	}
	srv := mcpserver.NewMCPServer("ruleagent", o.Version,
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithRecovery(),
		mcpserver.WithInstructions("Each tool runs a RuleGo rule chain: an AI agent or a business chain. "+
			"list_rule_chains, get_rule_chain and save_rule_chain read and hot-deploy the chains themselves."))
	srv.AddTools(catalogTools(s)...)
	ct := &chainTools{store: s, srv: srv, opts: o, byChain: map[string]exposedChain{}, byName: map[string]string{}}
	// Watch first, then expose what is already deployed: a chain deployed
	// in between is updated twice, never missed.
	s.OnChange(ct.update)
	for _, info := range s.List() {
		ct.update(info.ID)
	}
	return srv
}

// MCP returns the store's MCP server, the one registered as components.SelfMCPUDF.
func (s *Store) MCP() *mcpserver.MCPServer { return s.mcp }

// moduleVersion is the main module's version, "dev" for a local build.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
