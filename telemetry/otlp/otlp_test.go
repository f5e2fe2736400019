package otlp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/ruleagent/ruleagent/telemetry"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestWhenTracingIsOn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		force bool
		on    bool
		err   bool
	}{
		{name: "nothing set", env: nil, on: false},
		{name: "--otel", force: true, on: true},
		{name: "endpoint", env: map[string]string{EnvEndpoint: "http://127.0.0.1:4318"}, on: true},
		{name: "traces endpoint", env: map[string]string{EnvTracesEndpoint: "http://127.0.0.1:4318/v1/traces"}, on: true},
		{name: "exporter otlp", env: map[string]string{EnvExporter: "otlp"}, on: true},
		{name: "exporter none wins over endpoint", env: map[string]string{EnvExporter: "none", EnvEndpoint: "http://x"}, force: true, on: false},
		{name: "SDK disabled", env: map[string]string{EnvSDKDisabled: "true", EnvExporter: "otlp"}, force: true, on: false},
		{name: "exporter console", env: map[string]string{EnvExporter: "console"}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, err := wanted(env(tc.env), tc.force)
			if (err != nil) != tc.err || on != tc.on {
				t.Fatalf("on %v, err %v; want on %v, error %v", on, err, tc.on, tc.err)
			}
			if err != nil && !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v is not ErrConfig", err)
			}
		})
	}
}

func TestSetupRefusesWhatItCannotHonour(t *testing.T) {
	for name, e := range map[string]map[string]string{
		"http/json":       {EnvExporter: "otlp", EnvProtocol: "http/json"},
		"traces protocol": {EnvExporter: "otlp", EnvProtocol: "grpc", EnvTracesProtocol: "thrift"},
		"content":         {EnvExporter: "otlp", EnvCaptureContent: "maybe"},
		"console":         {EnvExporter: "console"},
	} {
		t.Run(name, func(t *testing.T) {
			shutdown, err := Setup(context.Background(), Options{Getenv: env(e)})
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v, want ErrConfig", err)
			}
			if telemetry.Enabled() {
				t.Fatal("tracing was turned on by a refused configuration")
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
	shutdown, err := Setup(context.Background(), Options{Getenv: env(nil)})
	if err != nil || telemetry.Enabled() {
		t.Fatalf("with nothing set: err %v, enabled %v", err, telemetry.Enabled())
	}
	_ = shutdown(context.Background())
}

func TestCaptureContentValues(t *testing.T) {
	for v, want := range map[string]bool{"": false, "true": true, "TRUE": true, "false": false, "SPAN_ONLY": true,
		"span_and_event": true, "EVENT_ONLY": false, "NO_CONTENT": false} {
		if got, err := captureContent(v); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", v, got, err, want)
		}
	}
}

// TestExportsOverHTTP sends a span over OTLP/HTTP, as the environment
// says, to a receiver that decodes what it gets.
func TestExportsOverHTTP(t *testing.T) {
	var (
		mu   sync.Mutex
		reqs []*collectortrace.ExportTraceServiceRequest
	)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		reqs = append(reqs, &req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	defer recv.Close()
	t.Setenv(EnvEndpoint, recv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "ruleagent-test")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci")
	t.Setenv(EnvCaptureContent, "true")
	shutdown, err := Setup(context.Background(), Options{Version: "v9"})
	if err != nil {
		t.Fatal(err)
	}
	if !telemetry.Enabled() || !telemetry.CaptureContent() {
		t.Fatal("tracing or content capture is off")
	}
	_, run := telemetry.StartRun(context.Background(), telemetry.RunInfo{ChainID: "hello", RunID: "run-1"})
	run.End(telemetry.RunEnd{Outcome: "success"})
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if telemetry.Enabled() {
		t.Fatal("tracing still on after shutdown")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) == 0 {
		t.Fatal("nothing exported")
	}
	rs := reqs[0].ResourceSpans[0]
	res := map[string]string{}
	for _, kv := range rs.Resource.Attributes {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	if res["service.name"] != "ruleagent-test" || res["service.version"] != "v9" || res["deployment.environment.name"] != "ci" {
		t.Errorf("resource %v", res)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != telemetry.ScopeName || ss.SchemaUrl != telemetry.SchemaURL || ss.Spans[0].Name != "invoke_agent hello" {
		t.Errorf("scope %v %s, span %s", ss.Scope, ss.SchemaUrl, ss.Spans[0].Name)
	}
}
