package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of tool calls beside gen_ai.tool.*.
const (
	// AttrToolKind is the tool's kind in ruleagent: builtin, rulechain,
	// agent or mcp (gen_ai.tool.type is "function" for every one).
	AttrToolKind    = attribute.Key("ruleagent.tool.type")
	AttrToolTarget  = attribute.Key("ruleagent.tool.target")
	AttrToolOutcome = attribute.Key("ruleagent.tool.outcome")
	AttrTruncated   = attribute.Key("ruleagent.tool.truncated")
)

// ToolTypeFunction is gen_ai.tool.type of every tool the model calls:
// the model writes a function call's arguments and the agent runs it.
const ToolTypeFunction = "function"

// ToolInfo describes a tool call as it starts.
type ToolInfo struct {
	Name   string
	CallID string
	// Kind is builtin, rulechain, agent or mcp ("" for a tool not found).
	Kind string
	// Target is the chain, agent or server the tool reaches.
	Target string
}

// Tool is a tool call's span (execute_tool). The zero Tool does nothing.
type Tool struct{ span trace.Span }

// StartTool starts a tool call's span, a child of ctx's span. What the
// call runs under the returned context (a rule chain, a sub-agent, an MCP
// request) is its child.
func StartTool(ctx context.Context, info ToolInfo) (context.Context, Tool) {
	t := tracer()
	if t == nil {
		return ctx, Tool{}
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(info.Name),
		semconv.GenAIToolCallID(info.CallID), semconv.GenAIToolType(ToolTypeFunction))
	if info.Kind != "" {
		attrs = append(attrs, AttrToolKind.String(info.Kind))
	}
	if info.Target != "" {
		attrs = append(attrs, AttrToolTarget.String(info.Target))
	}
	ctx, sp := t.Start(ctx, spanName("execute_tool", info.Name), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Tool{span: sp}
}

// Active reports whether the call has a span.
func (t Tool) Active() bool { return t.span != nil }

// CaptureContent reports whether the call's arguments and result are to
// be recorded (ToolEnd.Args, Result).
func (t Tool) CaptureContent() bool { return t.span != nil && CaptureContent() }

// ToolEnd is how a tool call ended.
type ToolEnd struct {
	// IsError marks a failed, refused or erroneous call; ErrorType is its
	// kind (error.type: policy_denied, timeout, invalid_args, ...).
	IsError   bool
	ErrorType string
	// Message is what the model reads of a failure (already scrubbed).
	Message   string
	Truncated bool
	// Args and Result are recorded only when content is captured; both
	// already scrubbed with the run's scrubber.
	Args, Result string
}

// End ends the tool call's span.
func (t Tool) End(e ToolEnd) {
	if t.span == nil {
		return
	}
	outcome := "success"
	if e.IsError {
		outcome = "error"
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, AttrToolOutcome.String(outcome))
	if e.Truncated {
		attrs = append(attrs, AttrTruncated.Bool(true))
	}
	if e.Args != "" {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(e.Args))
	}
	if e.Result != "" {
		attrs = append(attrs, semconv.GenAIToolCallResultKey.String(e.Result))
	}
	t.span.SetAttributes(attrs...)
	if e.IsError {
		typ := e.ErrorType
		if typ == "" {
			typ = semconv.ErrorTypeOther.Value.AsString()
		}
		setError(t.span, typ, e.Message)
	}
	t.span.End()
}
