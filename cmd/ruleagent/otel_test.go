package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/telemetry"
)

// TestTracingSettingsRefused: an OTEL_* setting ruleagent cannot honour
// stops serve, run and mcp before they start, naming the variable; with
// nothing set, tracing stays off.
func TestTracingSettingsRefused(t *testing.T) {
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--chains", "../../chains", "--data", t.TempDir()},
		{"run", "assistant", "--input", "hi", "--chains", "../../chains"},
		{"mcp", "--stdio"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "OTEL_TRACES_EXPORTER") {
			t.Errorf("%s: exit %d: %s", args[0], code, errb.String())
		}
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--otel", "--addr", "127.0.0.1:0", "--chains", "../../chains", "--data", t.TempDir()}, nil, &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("--otel with http/json: exit %d: %s", code, errb.String())
	}
	if telemetry.Enabled() {
		t.Error("tracing is on after a refused setting")
	}
}
