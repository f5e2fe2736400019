package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// This file binds the tools of mcp_port.go to github.com/mark3labs/mcp-go
// v1.2.1, which speaks both protocol eras: it serves server/discover, reads
// each 2026-07-28 request's _meta, sets resultType on every result, answers
// an unsupported version with -32022 and the supported list, sends a
// request's progress on its own response stream, and serves
// subscriptions/listen.

// gosdkHost publishes tools on an mcp-go server.
type gosdkHost struct{ srv *mcpserver.MCPServer }

func (h gosdkHost) setTool(def toolDef, run func(context.Context, ToolCall) ToolOutcome) {
	tool := mcp.NewToolWithRawSchema(def.Name, def.Description, def.InputSchema)
	tool.Title = def.Title
	if def.ReadOnly != nil {
		tool.Annotations.ReadOnlyHint = def.ReadOnly
	}
	if def.Destructive != nil {
		tool.Annotations.DestructiveHint = def.Destructive
	}
	if def.OpenWorld != nil {
		tool.Annotations.OpenWorldHint = def.OpenWorld
	}
	h.srv.AddTools(mcpserver.ServerTool{Tool: tool, Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta != nil {
			// W3C trace context in _meta (2026-07-28): the run joins the
			// caller's trace; it wins over the HTTP headers.
			ctx = telemetry.FromMeta(ctx, req.Params.Meta.AdditionalFields)
		}
		return render(ctx, run(ctx, h.toolCall(ctx, req)))
	}})
}

func (h gosdkHost) removeTool(name string) { h.srv.DeleteTools(name) }

// toolCall reads what the chain tools need of an mcp-go request.
func (h gosdkHost) toolCall(ctx context.Context, req mcp.CallToolRequest) ToolCall {
	call := ToolCall{Args: rawArguments(req), Peer: gosdkPeer{srv: h.srv, ctx: ctx},
		State: req.Params.RequestState}
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		call.Progress = req.Params.Meta.ProgressToken
	}
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		call.Modern = true
		call.CanElicit = info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
		// Tasks are served over HTTP and stdio, whose transports answer
		// the CreateTaskResult (mcpEndpoint, ServeStdio); elsewhere (in
		// process) a call runs as usual.
		_, overHTTP := ctx.Value(errSlotKey{}).(*errSlot)
		_, overStdio := ctx.Value(stdioErrorsKey{}).(*stdioErrors)
		if (overHTTP || overStdio) && info.ClientCapabilities != nil {
			_, call.Tasks = info.ClientCapabilities.Extensions[TasksExtension]
		}
	} else if s, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		call.CanElicit = s.GetClientCapabilities().Elicitation != nil
	}
	if len(req.Params.InputResponses) > 0 {
		call.Responses = make(map[string]json.RawMessage, len(req.Params.InputResponses))
		for k, v := range req.Params.InputResponses {
			raw, err := json.Marshal(v)
			if err != nil {
				raw = nil
			}
			call.Responses[k] = raw
		}
	}
	return call
}

// rawArguments is a call's arguments as JSON, "{}" when there are none.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	raw := bytes.TrimSpace(req.Params.RawArguments)
	if len(raw) == 0 && req.Params.Arguments != nil {
		if b, err := json.Marshal(req.Params.Arguments); err == nil {
			raw = b
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// render turns an outcome into mcp-go's result, or into the error mcp-go
// answers with. mcp-go v1.2.1 answers every handler error with -32603; the
// HTTP endpoint (mcpEndpoint) and ServeStdio give the client the outcome's
// own code.
func render(ctx context.Context, out ToolOutcome) (*mcp.CallToolResult, error) {
	switch {
	case out.Raw != nil:
		// A task's CreateTaskResult, which mcp-go cannot answer: the HTTP
		// endpoint (mcpEndpoint) or ServeStdio answers with it.
		if slot, ok := ctx.Value(errSlotKey{}).(*errSlot); ok {
			slot.setResult(out.Raw)
			return &mcp.CallToolResult{}, nil
		}
		if pending, ok := ctx.Value(stdioErrorsKey{}).(*stdioErrors); ok {
			var created struct {
				TaskID string `json:"taskId"`
			}
			_ = json.Unmarshal(out.Raw, &created)
			msg := "the MCP task " + created.TaskID + " was created" // unique: the id is
			pending.addResult(msg, out.Raw)
			return nil, errors.New(msg)
		}
		return nil, errors.New("tasks are only served over HTTP and stdio")
	case out.Err != nil:
		if slot, ok := ctx.Value(errSlotKey{}).(*errSlot); ok {
			slot.set(out.Err)
		} else if pending, ok := ctx.Value(stdioErrorsKey{}).(*stdioErrors); ok {
			pending.add(out.Err)
		}
		return nil, out.Err
	case len(out.Questions) > 0:
		b := mcpserver.NewInputRequestBuilder(out.State)
		for _, q := range out.Questions {
			b.Elicit(q.Key(), elicitationParams(q))
		}
		return b.ToolResult(), nil
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(out.Text)}, IsError: out.IsError,
		StructuredContent: out.Structured}
	if len(out.Meta) > 0 {
		res.Meta = &mcp.Meta{AdditionalFields: out.Meta}
	}
	return res, nil
}

// confirmSchema is the form of a question that only asks to accept or
// decline: MCP's form mode needs an object schema.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{}}`)

func elicitationParams(q ask.Question) mcp.ElicitationParams {
	schema := q.Schema
	if len(schema) == 0 {
		schema = confirmSchema
	}
	return mcp.ElicitationParams{Message: q.Message, RequestedSchema: schema}
}

// gosdkPeer reaches the client of one request.
type gosdkPeer struct {
	srv *mcpserver.MCPServer
	ctx context.Context
}

// requestStream is a transport's way to the client of one request (see
// mcpEndpoint and ServeStdio): a notification written through it reaches
// the client before the request's response, which mcp-go writes later
// through the same writer. mcp-go's own notifications travel on a queue of
// the session that any of its open requests may drain, on a goroutine of
// their own: a call's progress could reach the client on another call's
// stream, or after the call's own response.
type requestStream interface {
	notify(msg []byte)
}

type requestStreamKey struct{}

// progress writes notifications/progress, unless the request was
// cancelled: then nothing more is sent for it.
func (p gosdkPeer) progress(token any, n int, message string) {
	if p.ctx.Err() != nil {
		return
	}
	params := map[string]any{"progressToken": token, "progress": n, "message": message}
	if rs, ok := p.ctx.Value(requestStreamKey{}).(requestStream); ok {
		msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": string(mcp.MethodNotificationProgress), "params": params})
		if err == nil {
			rs.notify(msg)
		}
		return
	}
	_ = p.srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
}

func (p gosdkPeer) elicit(ctx context.Context, q ask.Question) (ask.Answer, error) {
	res, err := p.srv.RequestElicitation(ctx, mcp.ElicitationRequest{
		Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
		Params:  elicitationParams(q),
	})
	if err != nil {
		return ask.Answer{}, fmt.Errorf("asking the MCP client's user %s: %w", ask.Describe(q), err)
	}
	raw, err := json.Marshal(res.ElicitationResponse)
	if err != nil {
		return ask.Answer{}, err
	}
	a, err := decodeAnswer(raw, q)
	if err != nil {
		return ask.Answer{}, fmt.Errorf("the MCP client's answer to %s: %w", ask.Describe(q), err)
	}
	return a, nil
}
