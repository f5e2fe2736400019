// Package telemetry traces runs with OpenTelemetry, following the GenAI
// semantic conventions of semconv v1.41.0: one trace per run, a span for the
// run (invoke_agent), each LLM call (chat), each tool call (execute_tool) and
// each node step of a rule chain, with W3C trace context taken from callers
// and passed on to MCP servers.
//
// It is off until a tracer provider is installed (Install; package
// telemetry/otlp installs one from the OTEL_* environment). Off, every
// function here returns at once after one atomic load: no span, no
// allocation, no SDK in the process. The package imports only the
// OpenTelemetry API, so every layer of ruleagent may use it.
package telemetry

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of ruleagent's spans.
const ScopeName = "github.com/ruleagent/ruleagent"

// SemconvVersion is the version of the semantic conventions the spans
// follow (its schema URL is SchemaURL).
const SemconvVersion = "1.41.0"

// SchemaURL is the schema of the attributes the spans carry.
const SchemaURL = "https://opentelemetry.io/schemas/" + SemconvVersion

// Options change what the spans record.
type Options struct {
	// CaptureContent records message content: the messages sent to and
	// received from the model (gen_ai.input.messages,
	// gen_ai.output.messages) and tool arguments and results
	// (gen_ai.tool.call.arguments, gen_ai.tool.call.result), scrubbed with
	// the run's secret scrubber. Off by default, as the GenAI conventions
	// ask (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).
	CaptureContent bool
}

// state is what Install set; swapped whole so a reader sees one version.
type state struct {
	tracer  trace.Tracer
	content bool
}

var current atomic.Pointer[state]

// Install makes tp the provider of ruleagent's spans, with options o. A nil
// tp turns tracing off again. It is meant to be called once at start-up,
// before runs begin (runs already going keep the spans they started).
func Install(tp trace.TracerProvider, o Options) {
	if tp == nil {
		current.Store(nil)
		return
	}
	t := tp.Tracer(ScopeName, trace.WithSchemaURL(SchemaURL))
	current.Store(&state{tracer: t, content: o.CaptureContent})
}

// Enabled reports whether spans are recorded. It is the check on every hot
// path: one atomic load.
func Enabled() bool { return current.Load() != nil }

// CaptureContent reports whether message content is recorded.
func CaptureContent() bool {
	s := current.Load()
	return s != nil && s.content
}

func tracer() trace.Tracer {
	if s := current.Load(); s != nil {
		return s.tracer
	}
	return nil
}

// Scrubber redacts secrets (tools/scrub implements it).
type Scrubber interface {
	Scrub(string) string
}

// runScope is what a run leaves in its context for the spans below it:
// the conversation, the scrubber for what they record.
type runScope struct {
	conversation string
	scrub        Scrubber
}

type scopeKey struct{}

func scopeFrom(ctx context.Context) *runScope {
	s, _ := ctx.Value(scopeKey{}).(*runScope)
	return s
}

// scrub applies ctx's run scrubber to s.
func scrub(ctx context.Context, s string) string {
	if sc := scopeFrom(ctx); sc != nil && sc.scrub != nil {
		return sc.scrub.Scrub(s)
	}
	return s
}

// spanName is "{operation} {target}", or the operation alone when the
// target is not known.
func spanName(op, target string) string {
	if target == "" {
		return op
	}
	return op + " " + target
}
