package components

import (
	"github.com/rulego/rulego/api/types"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// SelfMCPUDF is the key under which a host (the server package's store)
// registers its own MCP server in the chains' RuleGo configuration
// (types.Config.Udf), so that an mcp tool with server "self" reaches the
// chains of its own process, in process. The value is a types.Script of
// type SelfMCPUDFType whose Content is the *mcpserver.MCPServer: RuleGo's
// JavaScript engine copies every other Udf value into each new VM, which
// would hand chain scripts the server.
const SelfMCPUDF = "ruleagent.mcp.self"

// SelfMCPUDFType is the types.Script type of the SelfMCPUDF value.
const SelfMCPUDFType = "ruleagent.mcp"

// RegisterSelfMCP registers s as the process's own MCP server in cfg, for
// the chains built with cfg. cfg.Udf is created if nil.
func RegisterSelfMCP(cfg *types.Config, s *mcpserver.MCPServer) {
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	cfg.Udf[SelfMCPUDF] = types.Script{Type: SelfMCPUDFType, Content: s}
}

// selfMCP returns the MCP server registered in rc, or nil.
func selfMCP(rc types.Config) *mcpserver.MCPServer {
	if sc, ok := rc.Udf[SelfMCPUDF].(types.Script); ok && sc.Type == SelfMCPUDFType {
		s, _ := sc.Content.(*mcpserver.MCPServer)
		return s
	}
	return nil
}
