// Package otlp turns ruleagent's tracing on from the standard OTEL_*
// environment: an OpenTelemetry SDK tracer provider exporting over OTLP
// (HTTP or gRPC), installed for package telemetry. A process that never
// calls Setup, or whose environment does not ask for traces, has no SDK
// tracer at all.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/ruleagent/ruleagent/telemetry"
)

// Environment variables Setup reads itself; the exporters read the rest of
// OTEL_EXPORTER_OTLP_* (headers, timeout, TLS, compression), the SDK
// OTEL_TRACES_SAMPLER[_ARG], OTEL_BSP_* and the span limits, and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// DefaultServiceName is service.name unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES say otherwise.
const DefaultServiceName = "ruleagent"

// Options of Setup.
type Options struct {
	// Force turns tracing on even when the environment names no endpoint
	// (serve --otel): the exporter then sends to its default,
	// http://localhost:4318 (or localhost:4317 over gRPC).
	Force bool
	// CaptureContent records message content whatever the environment
	// says (--otel-content).
	CaptureContent bool
	// Version is service.version.
	Version string
	// Getenv reads the environment (os.Getenv when nil); tests set it.
	// The exporters and the SDK still read the process environment.
	Getenv func(string) string
}

// ErrConfig reports an OTEL_* setting ruleagent cannot honour.
var ErrConfig = errors.New("tracing configuration")

// Setup reads the environment and, when it asks for traces (an OTLP
// endpoint is set, OTEL_TRACES_EXPORTER is otlp, or Options.Force), installs
// an SDK tracer provider that exports over OTLP. Tracing stays off with
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. The returned
// shutdown flushes the spans not yet sent and stops the exporter; it is a
// no-op when tracing is off. A setting ruleagent cannot honour (an
// exporter other than otlp, the http/json protocol) is an error, never
// ignored.
func Setup(ctx context.Context, o Options) (shutdown func(context.Context) error, err error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	noop := func(context.Context) error { return nil }
	on, err := wanted(getenv, o.Force)
	if err != nil || !on {
		return noop, err
	}
	capture, err := captureContent(getenv(EnvCaptureContent))
	if err != nil {
		return noop, err
	}
	exp, err := exporter(ctx, getenv)
	if err != nil {
		return noop, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName), semconv.ServiceVersion(o.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return noop, fmt.Errorf("%w: resource (OTEL_RESOURCE_ATTRIBUTES): %w", ErrConfig, err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { slog.Warn("tracing", "error", err) }))
	telemetry.Install(tp, telemetry.Options{CaptureContent: capture || o.CaptureContent})
	return func(ctx context.Context) error {
		telemetry.Install(nil, telemetry.Options{})
		return tp.Shutdown(ctx)
	}, nil
}

// wanted decides from the environment whether traces are exported.
func wanted(getenv func(string) string, force bool) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false, nil
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv(EnvExporter))); v {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return force || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != "", nil
	default:
		return false, fmt.Errorf("%w: %s=%q: ruleagent exports traces over OTLP only (otlp, or none)", ErrConfig, EnvExporter, v)
	}
}

// captureContent reads OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT.
// Besides true and false it takes the values other GenAI instrumentations
// read from the same variable: spans are where ruleagent records content.
func captureContent(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "span_only", "span_and_event":
		return true, nil
	case "", "false", "no_content", "event_only":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q: expected true or false", ErrConfig, EnvCaptureContent, v)
}

// exporter makes the OTLP exporter the protocol setting names.
func exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, error) {
	name, proto := EnvTracesProtocol, getenv(EnvTracesProtocol)
	if proto == "" {
		name, proto = EnvProtocol, getenv(EnvProtocol)
	}
	var (
		exp *otlptrace.Exporter
		err error
	)
	switch strings.ToLower(strings.TrimSpace(proto)) {
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("%w: %s=%q: ruleagent exports over http/protobuf or grpc", ErrConfig, name, proto)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: OTLP exporter: %w", ErrConfig, err)
	}
	return exp, nil
}
