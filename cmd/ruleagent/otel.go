package main

import (
	"cmp"
	"context"
	"flag"
	"log/slog"
	"os"
	"time"

	"github.com/ruleagent/ruleagent/telemetry"
	"github.com/ruleagent/ruleagent/telemetry/otlp"
)

// otelFlags turn tracing on (see README, Traces): the OTEL_* environment
// configures it, and these flags force it on and capture content.
type otelFlags struct{ on, content bool }

func (f *otelFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "otel", false, "export traces over OTLP even when OTEL_EXPORTER_OTLP_ENDPOINT is not set (to http://localhost:4318; the OTEL_* variables configure the exporter)")
	fs.BoolVar(&f.content, "otel-content", false, "record messages, tool arguments and results in the traces, scrubbed (as OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")
}

// start installs the tracer the environment and flags ask for; stop
// flushes the spans not yet sent (at most 5 s) and is safe to call when
// tracing is off. A setting ruleagent cannot honour is a usage error.
func (f *otelFlags) start(ctx context.Context, logger *slog.Logger) (stop func(), err error) {
	shutdown, err := otlp.Setup(ctx, otlp.Options{Force: f.on, CaptureContent: f.content, Version: buildVersion()})
	if err != nil {
		return nil, usagef("%v", err)
	}
	if telemetry.Enabled() {
		logger.Info("tracing: exporting spans over OTLP",
			"protocol", cmp.Or(os.Getenv(otlp.EnvTracesProtocol), os.Getenv(otlp.EnvProtocol), "http/protobuf"),
			"endpoint", cmp.Or(os.Getenv(otlp.EnvTracesEndpoint), os.Getenv(otlp.EnvEndpoint), "default"),
			"content", telemetry.CaptureContent())
	}
	return func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(c); err != nil {
			logger.Warn("tracing: spans not sent at exit", "err", err)
		}
	}, nil
}
