package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
)

// errNoMessage refuses an agent call without a question.
var errNoMessage = errors.New(`the agent needs "message": what to ask it (or "messages": an OpenAI conversation)`)

// call returns the handler of chain id's tool. A chain failure is a tool
// result with isError, so the client (often a model) can read it; only a
// malformed request is a protocol error, and mcp-go reports those itself.
func (c *chainTools) call(id string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c.mu.Lock()
		exposed, ok := c.byChain[id]
		c.mu.Unlock()
		if !ok {
			return mcp.NewToolResultError(fmt.Sprintf("chain %q is no longer deployed", id)), nil
		}
		input, err := chainInput(exposed.info, req)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		// Always a Sink of our own: in self mode ctx carries the calling
		// agent's Sink, and this run must not write into that stream.
		var sink events.Sink = events.Discard
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			progress := newProgressSink(ctx, c.srv, req.Params.Meta.ProgressToken, c.opts.TextProgressInterval)
			defer progress.stop()
			sink = progress
		}
		res, err := c.store.RunChain(ctx, id, input, nil, sink)
		if err != nil {
			return failedResult(res, err), nil
		}
		return answerResult(res), nil
	}
}

// chainInput turns a call's arguments into the chain's input message data.
// An agent with the default schema takes "message" (or OpenAI "messages");
// any other chain gets the arguments object as they came, so that large
// integers keep their digits.
func chainInput(info ChainInfo, req mcp.CallToolRequest) (string, error) {
	if info.IsAgent && len(info.InputSchema) == 0 {
		var in struct {
			Message  string          `json:"message"`
			Messages json.RawMessage `json:"messages"`
		}
		if err := req.BindArguments(&in); err != nil {
			return "", fmt.Errorf("the arguments are not an object: %w", err)
		}
		if len(in.Messages) > 0 && string(in.Messages) != "null" {
			return `{"messages":` + string(in.Messages) + `}`, nil
		}
		if strings.TrimSpace(in.Message) == "" {
			return "", errNoMessage
		}
		b, err := json.Marshal(map[string]string{"message": in.Message})
		return string(b), err
	}
	raw, err := rawArguments(req)
	if err != nil {
		return "", err
	}
	if raw[0] != '{' {
		return "", fmt.Errorf("the arguments must be a JSON object, not %s", raw)
	}
	return string(raw), nil
}

// rawArguments is a call's arguments as JSON, "{}" when there are none.
func rawArguments(req mcp.CallToolRequest) ([]byte, error) {
	raw := bytes.TrimSpace(req.Params.RawArguments)
	if len(raw) == 0 && req.Params.Arguments != nil {
		var err error
		if raw, err = json.Marshal(req.Params.Arguments); err != nil {
			return nil, fmt.Errorf("the arguments are not JSON: %w", err)
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return []byte("{}"), nil
	}
	return raw, nil
}

// answerResult is a chain's answer: its final message data as text, and in
// _meta the run's id, model and token usage when the chain reports them.
func answerResult(res Result) *mcp.CallToolResult {
	out := mcp.NewToolResultText(res.Msg.GetData())
	md := metadataOf(res.Msg)
	meta := map[string]any{}
	for _, k := range []string{"runId", "threadId", "model"} {
		if v := md[k]; v != "" {
			meta[k] = v
		}
	}
	usage := map[string]any{}
	for _, k := range []string{"promptTokens", "completionTokens", "totalTokens"} {
		if n, err := strconv.ParseInt(md[k], 10, 64); err == nil {
			usage[k] = n
		}
	}
	if len(usage) > 0 {
		meta["usage"] = usage
	}
	if len(meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: meta}
	}
	return out
}

// failedResult is a chain's failure: isError, the error as text, and in
// _meta the error code the agent gave it (cancelled, timeout, no_llm, ...).
func failedResult(res Result, err error) *mcp.CallToolResult {
	out := mcp.NewToolResultError(err.Error())
	if code := metadataOf(res.Msg)["errorCode"]; code != "" {
		out.Meta = &mcp.Meta{AdditionalFields: map[string]any{"errorCode": code}}
	}
	return out
}

// metadataOf reads a message's metadata; a run that never ended has none.
func metadataOf(m types.RuleMsg) map[string]string {
	if m.Metadata == nil {
		return nil
	}
	return m.Metadata.Values()
}
