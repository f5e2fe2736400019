//go:build tracing

// Package tracing exports the traces of real runs to a real Jaeger over
// OTLP and reads them back through Jaeger's query API. It needs the Jaeger
// all-in-one binary (JAEGER_BIN, built from the Go module in test/jaeger)
// and the ruleagent binary (RULEAGENT_BIN): run it with `make
// test-tracing`, which builds both.
package tracing

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/peers"
	"github.com/ruleagent/ruleagent/internal/proctest"
)

// need returns the path an environment variable names, failing (under
// CI) or skipping the test when it is missing.
func need(t *testing.T, env, how string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: %s", env, how)
		}
		t.Skipf("%s is not set: %s", env, how)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return p
}

// jaeger is a Jaeger all-in-one on loopback ports, memory storage.
type jaeger struct {
	otlpHTTP, otlpGRPC, query string
}

func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	j := &jaeger{}
	port := func() string { return fmt.Sprintf("127.0.0.1:%d", peers.FreePort(t)) }
	j.otlpHTTP, j.otlpGRPC, j.query = port(), port(), port()
	health := port()
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %q
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %q
    grpc:
      endpoint: %q
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %q
      http:
        endpoint: %q
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, health, j.query, port(), j.otlpGRPC, j.otlpHTTP)
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &proctest.Buffer{}
	start(t, out, bin, nil, "--config", path)
	waitHTTP(t, "http://"+j.query+"/api/services", out)
	return j
}

// start runs a program in its own process group until the test ends.
func start(t *testing.T, out *proctest.Buffer, bin string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM first: ruleagent flushes its spans; then make sure.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s printed:\n%s", filepath.Base(bin), out)
		}
	})
}

func waitHTTP(t *testing.T, url string, out *proctest.Buffer) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer: %s", url, out)
		}
	}
}

// replica is a `ruleagent serve` exporting its spans to Jaeger.
func replica(t *testing.T, bin string, chains map[string]string, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", peers.FreePort(t))
	out := &proctest.Buffer{}
	start(t, out, bin, append(env, "OTEL_BSP_SCHEDULE_DELAY=100"), "serve", "--addr", addr, "--chains", dir,
		"--data", filepath.Join(dir, "data"), "--sandbox", "off", "--audit", "off")
	waitHTTP(t, "http://"+addr+"/healthz", out)
	return "http://" + addr
}

func agent(id, name, prompt string, tools []any) string {
	cfg := map[string]any{"systemPrompt": prompt, "maxRetries": 0}
	if tools != nil {
		cfg["tools"] = tools
	}
	return chain(id, name, []any{map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": cfg}}, nil)
}

func chain(id, name string, nodes, connections []any) string {
	if connections == nil {
		connections = []any{}
	}
	b, _ := json.Marshal(map[string]any{"ruleChain": map[string]any{"id": id, "name": name, "additionalInfo": map[string]any{"description": name + "."}},
		"metadata": map[string]any{"firstNodeIndex": 0, "nodes": nodes, "connections": connections}})
	return string(b)
}

// jspan is a span as Jaeger's query API (/api/traces/{id}) returns it.
type jspan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

func (s jspan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jspan) tag(k string) any {
	for _, kv := range s.Tags {
		if kv.Key == k {
			return kv.Value
		}
	}
	return nil
}

type jtrace struct {
	Spans     []jspan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

// fetchTrace reads trace id from Jaeger until it holds at least n spans.
func fetchTrace(t *testing.T, j *jaeger, id string, n int) jtrace {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get("http://" + j.query + "/api/traces/" + id)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(body)
		var r struct {
			Data []jtrace `json:"data"`
		}
		if resp.StatusCode == http.StatusOK && json.Unmarshal(body, &r) == nil && len(r.Data) == 1 && len(r.Data[0].Spans) >= n {
			// The batches of both replicas are in; give a late one a moment.
			time.Sleep(500 * time.Millisecond)
			return r.Data[0]
		}
	}
	t.Fatalf("trace %s never held %d spans: %s", id, n, last)
	return jtrace{}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestTraceInJaeger: a caller in trace T calls replica A's front agent
// with its traceparent. The agent's chain prepares the input in a node,
// then its agent calls a rulechain tool, a sub-agent, and replica B's
// reviewer agent over MCP. A exports over OTLP/HTTP, B over OTLP/gRPC, to
// one Jaeger; the trace read back from Jaeger's query API is the caller's,
// with the run under the caller's span, every span in its place, and B's
// run under A's MCP tool call (the trace context went out in _meta).
func TestTraceInJaeger(t *testing.T) {
	jaegerBin := need(t, "JAEGER_BIN", "make test-tracing builds Jaeger (make jaeger)")
	ruleagent := need(t, "RULEAGENT_BIN", "make test-tracing builds ruleagent (make build)")
	j := startJaeger(t, jaegerBin)

	llm := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("You are the front agent."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if len(r.ToolResults()) > 0 {
				return llmtest.Response{Text: "All three answered.", Usage: &llmtest.Usage{PromptTokens: 300, CompletionTokens: 12, CachedTokens: 100}}
			}
			return llmtest.Response{ToolCalls: []llmtest.ToolCall{
				{ID: "call_lookup", Name: "lookup", Arguments: `{"key":"A-1"}`},
				{ID: "call_helper", Name: "helper", Arguments: `{"message":"help"}`},
				{ID: "call_review", Name: "b__reviewer", Arguments: `{"message":"review this"}`}},
				Usage: &llmtest.Usage{PromptTokens: 200, CompletionTokens: 30, ReasoningTokens: 8}}
		})},
		llmtest.Rule{Match: llmtest.SystemContains("You are the helper agent."), Script: llmtest.Always(llmtest.Reply("The helper helped."))},
		llmtest.Rule{Match: llmtest.SystemContains("You are the reviewer agent."), Script: llmtest.Always(llmtest.Reply("Looks good."))},
	))
	globals := []string{"RULEAGENT_GLOBAL_LLM_URL=" + llm.URL, "RULEAGENT_GLOBAL_API_KEY=sk-test", "RULEAGENT_GLOBAL_MODEL=test-model"}

	b := replica(t, ruleagent, map[string]string{"reviewer": agent("reviewer", "Reviewer", "You are the reviewer agent.", nil)},
		append(globals, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+j.otlpGRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SERVICE_NAME=ruleagent-b")...)
	front := chain("front", "Front", []any{
		map[string]any{"id": "prep", "type": "jsTransform", "name": "Prepare", "configuration": map[string]any{
			"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}},
		map[string]any{"id": "agent", "type": "ai/agent", "name": "Agent", "configuration": map[string]any{
			"systemPrompt": "You are the front agent.", "maxRetries": 0, "tools": []any{
				map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
					"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}},
				map[string]any{"type": "agent", "name": "helper", "targetId": "helper"},
				map[string]any{"type": "mcp", "name": "b", "config": map[string]any{"server": b + "/mcp"}},
			}}},
	}, []any{map[string]any{"fromId": "prep", "toId": "agent", "type": "Success"}})
	a := replica(t, ruleagent, map[string]string{
		"front":  front,
		"helper": agent("helper", "Helper", "You are the helper agent.", nil),
		"lookup": chain("lookup", "Lookup", []any{map[string]any{"id": "js", "type": "jsTransform", "name": "JS", "configuration": map[string]any{
			"jsScript": "return {msg: {found: msg.key}, metadata: metadata, msgType: msgType};"}}}, nil),
	}, append(globals, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+j.otlpHTTP, "OTEL_SERVICE_NAME=ruleagent-a",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")...)

	traceID, callerSpan := randomHex(16), randomHex(8)
	req, _ := http.NewRequest(http.MethodPost, a+"/api/v1/chains/front/run", strings.NewReader(`{"input":"check A-1","threadId":"thread-j"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "All three answered.") {
		t.Fatalf("run: %d %s", resp.StatusCode, body)
	}

	// A: the request, run, 2 steps, 2 chats, 3 tool calls, lookup's step,
	// the helper's run, step and chat (13); B: its run, step and chat (3).
	tr := fetchTrace(t, j, traceID, 16)
	byOp := map[string][]jspan{}
	for _, s := range tr.Spans {
		if s.TraceID != traceID {
			t.Errorf("span %s in trace %s", s.OperationName, s.TraceID)
		}
		byOp[s.OperationName] = append(byOp[s.OperationName], s)
	}
	one := func(op, service string) jspan {
		t.Helper()
		for _, s := range byOp[op] {
			if tr.Processes[s.ProcessID].ServiceName == service {
				return s
			}
		}
		t.Fatalf("no span %q of %s in %v", op, service, keys(byOp))
		return jspan{}
	}
	under := func(child, parent jspan) {
		t.Helper()
		if child.parent() != parent.SpanID {
			t.Errorf("%s (%s) is under %s, not %s (%s)", child.OperationName, child.SpanID, child.parent(), parent.OperationName, parent.SpanID)
		}
	}

	// The request A served is a server span under the caller's; the run
	// it started is under it.
	request := one("POST /api/v1/chains/{id}/run", "ruleagent-a")
	if request.parent() != callerSpan {
		t.Errorf("the request is under %q, not the caller's span %s", request.parent(), callerSpan)
	}
	if got := request.tag("http.route"); got != "/api/v1/chains/{id}/run" {
		t.Errorf("the request's http.route = %v", got)
	}
	run := one("invoke_agent Front", "ruleagent-a")
	under(run, request)
	for k, want := range map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "front", "gen_ai.conversation.id": "thread-j",
		"ruleagent.run.outcome": "success", "gen_ai.provider.name": "127.0.0.1"} {
		if got := run.tag(k); got != want {
			t.Errorf("run %s = %v, want %v", k, got, want)
		}
	}
	var steps []jspan
	for op, ss := range byOp {
		if strings.HasPrefix(op, "node ") {
			steps = append(steps, ss...)
		}
	}
	stepOf := func(chainID, service string) jspan {
		t.Helper()
		for _, s := range steps {
			if s.tag("ruleagent.chain.id") == chainID && tr.Processes[s.ProcessID].ServiceName == service && s.tag("ruleagent.node.id") != "prep" {
				return s
			}
		}
		t.Fatalf("no node step of %s in %s", chainID, service)
		return jspan{}
	}
	prep, agentStep := one("node prep", "ruleagent-a"), stepOf("front", "ruleagent-a")
	under(prep, run)
	under(agentStep, run)
	if prep.tag("ruleagent.node.type") != "jsTransform" || prep.tag("ruleagent.node.relation") != "Success" {
		t.Errorf("prep step tags %v", prep.Tags)
	}

	var frontChats []jspan
	for _, c := range byOp["chat test-model"] {
		if c.parent() == agentStep.SpanID {
			frontChats = append(frontChats, c)
		}
	}
	if len(frontChats) != 2 {
		t.Fatalf("%d chats under the front agent's step, want 2", len(frontChats))
	}
	var usageIn float64
	for _, c := range frontChats {
		for _, k := range []string{"gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.usage.input_tokens",
			"gen_ai.usage.output_tokens", "gen_ai.response.finish_reasons", "gen_ai.response.time_to_first_chunk", "gen_ai.input.messages"} {
			if c.tag(k) == nil {
				t.Errorf("chat %s has no %s: %v", c.SpanID, k, c.Tags)
			}
		}
		n, _ := c.tag("gen_ai.usage.input_tokens").(float64)
		usageIn += n
	}
	if usageIn != 500 {
		t.Errorf("the front chats' input tokens add up to %v, want 200+300", usageIn)
	}

	lookup, helper, review := one("execute_tool lookup", "ruleagent-a"), one("execute_tool helper", "ruleagent-a"), one("execute_tool b__reviewer", "ruleagent-a")
	for _, c := range []jspan{lookup, helper, review} {
		under(c, agentStep)
	}
	if review.tag("gen_ai.tool.call.id") != "call_review" || review.tag("ruleagent.tool.type") != "mcp" || review.tag("gen_ai.tool.type") != "function" ||
		review.tag("gen_ai.tool.call.result") != "Looks good." {
		t.Errorf("MCP call tags %v", review.Tags)
	}
	under(stepOf("lookup", "ruleagent-a"), lookup)
	sub := one("invoke_agent Helper", "ruleagent-a")
	under(sub, helper)
	subStep := stepOf("helper", "ruleagent-a")
	under(subStep, sub)
	subChat := false
	for _, c := range byOp["chat test-model"] {
		subChat = subChat || c.parent() == subStep.SpanID
	}
	if !subChat {
		t.Error("the sub-agent's LLM call is not in its step")
	}

	// Replica B joined the trace through _meta.traceparent: its run is the
	// child of A's MCP tool call.
	bRun := one("invoke_agent Reviewer", "ruleagent-b")
	under(bRun, review)
	if bRun.tag("ruleagent.run.source") != "mcp" {
		t.Errorf("B's run tags %v", bRun.Tags)
	}
	bStep := stepOf("reviewer", "ruleagent-b")
	under(bStep, bRun)
	bChat := one("chat test-model", "ruleagent-b")
	under(bChat, bStep)
	if bChat.tag("gen_ai.input.messages") != nil {
		t.Error("B records content without its operator's opt-in")
	}
}

func keys(m map[string][]jspan) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
