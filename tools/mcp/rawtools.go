package mcptool

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go v1.2.1 decodes a listed tool's inputSchema into a struct that
// keeps only type, properties, required, $defs and additionalProperties:
// $schema, allOf/anyOf, if/then/else, $anchor and every other JSON Schema
// 2020-12 keyword at the top level are lost. The model must see the schema
// the server wrote, so the transports below keep each tools/list page as it
// arrived, and asListed puts the schemas back. Each wraps mcp-go's
// transport by embedding it, so the client still finds every interface the
// transport implements (HTTP headers, server requests, lost connections).

// listedSchemas are the input schemas of the tools a server last listed, by
// tool name, as the server sent them.
type listedSchemas struct {
	mu     sync.Mutex
	byName map[string]json.RawMessage
}

// observe records the schemas of a tools/list page. A first page (no
// cursor) starts a new listing.
func (l *listedSchemas) observe(req transport.JSONRPCRequest, resp *transport.JSONRPCResponse, err error) {
	if err != nil || resp == nil || resp.Error != nil || req.Method != string(mcp.MethodToolsList) {
		return
	}
	var page struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(resp.Result, &page) != nil {
		return
	}
	var params struct {
		Cursor string `json:"cursor"`
	}
	if b, err := json.Marshal(req.Params); err == nil {
		_ = json.Unmarshal(b, &params)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if params.Cursor == "" || l.byName == nil {
		l.byName = map[string]json.RawMessage{}
	}
	for _, t := range page.Tools {
		if len(t.InputSchema) > 0 {
			l.byName[t.Name] = t.InputSchema
		}
	}
}

// asListed gives each tool the input schema the server sent for it.
func (l *listedSchemas) asListed(tools []mcp.Tool) []mcp.Tool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range tools {
		if raw, ok := l.byName[tools[i].Name]; ok {
			tools[i].RawInputSchema = raw
		}
	}
	return tools
}

// keepingHTTP is the streamable HTTP transport, keeping tool listings.
type keepingHTTP struct {
	*transport.StreamableHTTP
	schemas *listedSchemas
}

func (k keepingHTTP) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := k.StreamableHTTP.SendRequest(ctx, req)
	k.schemas.observe(req, resp, err)
	return resp, err
}

// keepingStdio is the stdio transport, keeping tool listings.
type keepingStdio struct {
	*transport.Stdio
	schemas *listedSchemas
}

func (k keepingStdio) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := k.Stdio.SendRequest(ctx, req)
	k.schemas.observe(req, resp, err)
	return resp, err
}

// keepingSSE is the legacy SSE transport, keeping tool listings.
type keepingSSE struct {
	*transport.SSE
	schemas *listedSchemas
}

func (k keepingSSE) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := k.SSE.SendRequest(ctx, req)
	k.schemas.observe(req, resp, err)
	return resp, err
}
