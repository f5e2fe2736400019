package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Names of the span events of an LLM call that is retried or fails over.
const (
	EventRetry    = "ruleagent.llm.retry"
	EventFailover = "ruleagent.llm.failover"
)

// Attributes of retry and failover events.
const (
	AttrAttempt = attribute.Key("ruleagent.llm.attempt")
	AttrDelayMs = attribute.Key("ruleagent.llm.retry_delay_ms")
)

// ChatInfo describes an LLM call as it starts.
type ChatInfo struct {
	// Model is the model asked for first (gen_ai.request.model).
	Model string
	// Provider is gen_ai.provider.name of the endpoint asked first.
	Provider string
	// Address and Port are the endpoint's host and port.
	Address string
	Port    int
	// Stream reports a streamed request.
	Stream bool
}

// Chat is an LLM call's span (chat). The zero Chat does nothing.
type Chat struct {
	span trace.Span
	ctx  context.Context
}

// StartChat starts an LLM call's span, a child of ctx's span.
func StartChat(ctx context.Context, info ChatInfo) (context.Context, Chat) {
	t := tracer()
	if t == nil {
		return ctx, Chat{}
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(info.Provider),
		semconv.GenAIRequestModel(info.Model), semconv.GenAIRequestStream(info.Stream))
	if info.Address != "" {
		attrs = append(attrs, semconv.ServerAddress(info.Address))
		if info.Port > 0 {
			attrs = append(attrs, semconv.ServerPort(info.Port))
		}
	}
	if sc := scopeFrom(ctx); sc != nil && sc.conversation != "" {
		attrs = append(attrs, semconv.GenAIConversationID(sc.conversation))
	}
	ctx, sp := t.Start(ctx, spanName("chat", info.Model), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, Chat{span: sp, ctx: ctx}
}

// Recording reports whether the span records (so content is worth
// building).
func (c Chat) Recording() bool { return c.span != nil && c.span.IsRecording() }

// Retry is one retry or failover of an LLM call.
type Retry struct {
	// Address and Model are those of the next attempt.
	Address string
	Model   string
	Attempt int
	// Status is the HTTP status of the failed attempt, 0 for none.
	Status int
	// ErrorType classifies the failure.
	ErrorType string
	Delay     time.Duration
	Failover  bool
}

// Retry records a retry or a failover as a span event.
func (c Chat) Retry(r Retry) {
	if c.span == nil {
		return
	}
	name := EventRetry
	if r.Failover {
		name = EventFailover
	}
	attrs := []attribute.KeyValue{semconv.ServerAddress(r.Address), semconv.GenAIRequestModel(r.Model),
		AttrAttempt.Int(r.Attempt), semconv.ErrorTypeKey.String(r.ErrorType)}
	if r.Status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(r.Status))
	}
	if !r.Failover {
		attrs = append(attrs, AttrDelayMs.Int64(r.Delay.Milliseconds()))
	}
	c.span.AddEvent(name, trace.WithAttributes(attrs...))
}

// ChatEnd is how an LLM call ended.
type ChatEnd struct {
	// Model and Provider answered (gen_ai.response.model; the provider
	// changes on a failover).
	Model        string
	Provider     string
	FinishReason string
	Usage        Usage
	// FirstChunk is the time from the request to the first streamed
	// delta; zero when nothing streamed.
	FirstChunk time.Duration
	// ErrorType classifies a failure ("" on success); Message describes
	// it (scrubbed here with the run's scrubber).
	ErrorType string
	Message   string
	// Input and Output are the messages as JSON in the conventions'
	// schema, set only when content is captured (scrubbed here).
	Input, Output string
}

// End ends the LLM call's span.
func (c Chat) End(e ChatEnd) {
	if c.span == nil {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	if e.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(e.Provider))
	}
	if e.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(e.Model))
	}
	if e.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasons(e.FinishReason))
	}
	if e.FirstChunk > 0 {
		attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(e.FirstChunk.Seconds()))
	}
	if e.ErrorType == "" {
		attrs = append(attrs, e.Usage.attributes()...)
	}
	if e.Input != "" {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(scrub(c.ctx, e.Input)))
	}
	if e.Output != "" {
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(scrub(c.ctx, e.Output)))
	}
	c.span.SetAttributes(attrs...)
	setError(c.span, e.ErrorType, scrub(c.ctx, e.Message))
	c.span.End()
}
