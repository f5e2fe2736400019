package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/proctest"
)

// serve runs `ruleagent serve` in the test until its context is cancelled,
// and waits until it answers /healthz.
func serve(t *testing.T, ctx context.Context, args ...string) (addr string, out, logs *proctest.Buffer, exit <-chan int) {
	t.Helper()
	addr = proctest.FreeAddr(t)
	out, logs = &proctest.Buffer{}, &proctest.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, append([]string{"serve", "--addr", addr, "--data", t.TempDir()}, args...), nil, out, logs)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return addr, out, logs, code
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited with %d: %s %s", c, out, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The banner says what loaded and that the LLM is configured; logs are
// JSON with the run id; on shutdown a run that outlives the grace period
// is cancelled and its stream ends with one terminal event, cancelled.
func TestServeBannerLogsAndGracefulShutdown(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: strings.Repeat("slowly ", 50), ChunkSize: 7, ChunkDelay: 100 * time.Millisecond}))
	setLLM(t, srv.URL)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, out, logs, exit := serve(t, ctx, "--chains", repoChain(""), "--log-format", "json", "--grace", "300ms")
	banner := out.String()
	for _, want := range []string{"ruleagent serving", "http://" + addr, "chains: 10 loaded (8 agents)", "LLM: " + srv.URL + ", model test-model", "editor: http://" + addr + "/"} {
		if !strings.Contains(banner, want) {
			t.Errorf("banner lacks %q:\n%s", want, banner)
		}
	}

	resp, err := http.Post("http://"+addr+"/api/v1/chains/assistant/run", "application/json", strings.NewReader(`{"input":"hi","stream":true,"runId":"run-shutdown"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
			if strings.Contains(d, "TEXT_MESSAGE_CONTENT") && len(events) == 4 {
				stop() // SIGTERM
			}
		}
	}
	if last := events[len(events)-1]; !strings.Contains(last, `"type":"RUN_FINISHED"`) || !strings.Contains(last, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("the stream ended with %s", last)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited with %d: %s", code, logs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	var sawRun, sawShutdown bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %q", line)
		}
		if rec["msg"] == "run" && rec["run"] == "run-shutdown" && rec["outcome"] == "cancelled" {
			sawRun = true
		}
		if rec["msg"] == "shutting down" {
			sawShutdown = true
		}
	}
	if !sawRun || !sawShutdown {
		t.Fatalf("logs lack the run or the shutdown:\n%s", logs)
	}
	// serve offers the chains over MCP: which one it withholds, and why,
	// is logged once, as it starts (a run says nothing about it).
	if n := strings.Count(logs.String(), `"msg":"mcp: chain not exposed: other chains bind its parameters, and an MCP client would choose them","chain":"order-status","bound":["userId"]`); n != 1 {
		t.Fatalf("the withheld chain is logged %d times, want once:\n%s", n, logs)
	}
}

// With no LLM the server starts on the built-in demo model, says so and
// how to set a real one, and every route works; a run's answer is the demo
// model's, marked as such.
func TestServeWithoutLLM(t *testing.T) {
	noLLM(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, out, _, _ := serve(t, ctx, "--chains", repoChain(""))
	if !strings.Contains(out.String(), "LLM: the built-in demo model") || !strings.Contains(out.String(), "OPENAI_BASE_URL") {
		t.Fatalf("banner: %s", out)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if sb, ok := health["sandbox"].(map[string]any); !ok || sb["defaultMode"] == nil {
		t.Fatalf("healthz does not say whether commands are confined: %v", health)
	}
	if health["demoModel"] != true {
		t.Fatalf("healthz does not say the demo model answers: %v", health)
	}
	// Without --auth a request's user id is its word (the editor sends one).
	if health["verifiedIdentity"] != false {
		t.Fatalf("healthz does not say who decides the user: %v", health)
	}
	for _, p := range []string{"/api/v1/chains", "/api/v1/components", "/api/v1/chains/assistant", "/v1/models", "/"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	resp, err = http.Post("http://"+addr+"/api/v1/chains/assistant/run", "application/json", strings.NewReader(`{"input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		Outcome  string            `json:"outcome"`
		Data     string            `json:"data"`
		Metadata map[string]string `json:"metadata"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans.Outcome != "success" || !strings.HasPrefix(ans.Data, "[demo model] ") || ans.Metadata["model"] != "ruleagent-demo" {
		t.Fatalf("run on the demo model: %+v", ans)
	}
}

// A URL without a model is a configuration, not an absence: the demo model
// does not stand in, and a run says what is missing.
func TestServeHalfConfiguredLLM(t *testing.T) {
	noLLM(t)
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, out, _, _ := serve(t, ctx, "--chains", repoChain(""))
	if !strings.Contains(out.String(), "LLM: not configured") {
		t.Fatalf("banner: %s", out)
	}
	resp, err := http.Post("http://"+addr+"/api/v1/chains/assistant/run", "application/json", strings.NewReader(`{"input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if ans["errorCode"] != "no_llm" || !strings.Contains(fmt.Sprint(ans["error"]), "missing model") {
		t.Fatalf("run without a model: %v", ans)
	}
}

// noLLM clears every variable that configures the LLM globals.
func noLLM(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "RULEAGENT_GLOBAL_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

func TestServeRefusesAnOpenAddressWithoutToken(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0"}, nil, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "--token") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if code := run(context.Background(), []string{"serve", "--log-format", "xml"}, nil, &out, &errb); code != exitUsage {
		t.Fatalf("bad log format: exit %d", code)
	}
}

// --policy binds every agent the server runs, and every tool call lands in
// the audit log under --data; a policy the server cannot read stops it
// before it listens.
func TestServePolicyAndAudit(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply(res[0].Content)
		}
		return llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-1001"}`))
	}))
	setLLM(t, srv.URL)
	data := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, out, logs, exit := serve(t, ctx, "--chains", repoChain(""), "--data", data, "--policy", `{"deny":["group:chains"]}`)
	if !strings.Contains(out.String(), `policy: {"deny":["group:chains"]}`) || !strings.Contains(out.String(), "audit: "+filepath.Join(data, "audit")) {
		t.Fatalf("banner: %s", out)
	}
	resp, err := http.Post("http://"+addr+"/api/v1/chains/support-agent/run", "application/json",
		strings.NewReader(`{"input":"Where is A-1001?","metadata":{"userId":"u-7"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var ans struct{ Data, RunID string }
	json.NewDecoder(resp.Body).Decode(&ans)
	resp.Body.Close()
	if !strings.Contains(ans.Data, "get_order_status is denied by the server's tool policy (deny group:chains)") {
		t.Fatalf("answer %q", ans.Data)
	}
	if got := srv.Requests()[0].ToolNames(); len(got) != 0 {
		t.Fatalf("offered %v", got)
	}
	stop()
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d: %s", code, logs)
	}
	// The log is closed on shutdown, after the runs: the record is on disk.
	files, _ := filepath.Glob(filepath.Join(data, "audit", "audit-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("audit files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	var rec map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
		t.Fatalf("audit %q: %v", b, err)
	}
	if rec["tool"] != "get_order_status" || rec["outcome"] != "denied" || rec["runId"] != ans.RunID || rec["userId"] != "u-7" || rec["chainId"] != "support-agent" {
		t.Fatalf("audit record %v", rec)
	}
	if st, _ := os.Stat(files[0]); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}

	var o, e bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--addr", proctest.FreeAddr(t), "--data", t.TempDir(), "--policy", `{"profile":"open"}`}, nil, &o, &e); code != exitUsage ||
		!strings.Contains(e.String(), `--policy: policy: profile: unknown profile "open"`) {
		t.Fatalf("bad policy: exit %d: %s", code, e.String())
	}
}

// With --drain-delay, a server told to stop goes on answering for that
// long: /readyz says draining (503) and a new run gets 503, so a load
// balancer polling readiness takes it out before its listener closes;
// then it exits 0.
func TestServeDrainDelayKeepsAnsweringDraining(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "hello"}))
	setLLM(t, srv.URL)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, _, logs, exit := serve(t, ctx, "--chains", repoChain(""), "--grace", "10s", "--drain-delay", "1500ms")
	stop() // SIGTERM
	var ready *http.Response
	deadline := time.Now().Add(time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			t.Fatalf("/readyz while draining: %v (the listener closed at once)", err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			ready = resp
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("/readyz answered %d a second after the stop", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var rep struct {
		Status   string `json:"status"`
		Draining bool   `json:"draining"`
	}
	err := json.NewDecoder(ready.Body).Decode(&rep)
	ready.Body.Close()
	if err != nil || rep.Status != "draining" || !rep.Draining {
		t.Fatalf("/readyz while draining: %+v, %v", rep, err)
	}
	run, err := http.Post("http://"+addr+"/api/v1/chains/assistant/run", "application/json", strings.NewReader(`{"input":"hi"}`))
	if err != nil {
		t.Fatalf("a run while draining: %v", err)
	}
	run.Body.Close()
	if run.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a run while draining got %d, want 503", run.StatusCode)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Fatalf("serve exited with %d: %s", code, logs)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its drain delay")
	}
}
