// Package mcptool is the client side of MCP: the "mcp" entry of an agent's
// tools array. One entry names one MCP server and expands into that
// server's tools:
//
//	{"type": "mcp", "name": "fs", "config": {"server": "stdio:npx -y @modelcontextprotocol/server-filesystem /data"}}
//	{"type": "mcp", "name": "gh", "config": {"server": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer <token>"}, "tools": ["search_*", "get_issue"]}}
//	{"type": "mcp", "name": "old", "config": {"server": "http://127.0.0.1:3001/sse"}}
//	{"type": "mcp", "name": "chains", "config": {"server": "self"}}
//
// Servers: "self" is this process's own MCP server, called in process with
// no network (Options.Self); an http(s) URL is tried with streamable HTTP
// first and, when the server answers the initialize POST with a 4xx status
// (the MCP spec's backwards-compatibility rule), with the legacy SSE
// transport at the same URL; "stdio:<command line>" (or command and args)
// starts a local process whose environment holds only an allowlist of this
// process's variables plus env. See Config for every field.
//
// The model sees each tool as <prefix>__<tool>, the prefix being the
// entry's name or one derived from the server; naming.go states the rule
// that keeps the mapping injective within 64 characters.
//
// All the tools of an entry share one client. It connects when the tool set
// is built (within connectTimeout), follows notifications/tools/list_changed
// by listing the tools again and refreshing the agent's tool set, and, when
// the server goes away, fails the call that notices with an
// execution_failed error and reconnects on the next call, waiting
// exponentially longer between failed attempts without ever holding a call
// for more than one connect timeout. Closing the tool set closes the client
// and stops a stdio server with every process it started.
package mcptool
