package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/sse"
)

// The flooding agents stream far more text than a stalled client's
// socket buffers hold.
const (
	promptFloodTimeout = "You flood until your timeout."
	promptFloodSlow    = "You flood slowly."
	promptFloodFast    = "You flood fast."
	promptLongAnswer   = "You answer at length."
)

// smallBuffers is a listener whose connections have a small send buffer,
// so that a client that stops reading stalls the server's writes after a
// few kilobytes, as a stuck proxy would after more.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// slowEnv serves the flooding agents over a small-buffer listener, with a
// short stream write timeout, recording what each request was answered
// and when its handler returned.
func slowEnv(t *testing.T, writeTimeout time.Duration) (*apiEnv, *seenRequests) {
	t.Helper()
	flood := strings.Repeat("flood ", 20000)
	// About 600 KB/s, for seconds: the socket buffers are full within a
	// second, the queue's 4 MiB are not.
	slowFlood := llmtest.Response{Text: strings.Repeat(flood, 25), ChunkSize: 512, ChunkDelay: time.Millisecond}
	e := &apiEnv{t: t, dir: t.TempDir(), llm: llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptFloodTimeout), Script: llmtest.Always(slowFlood)},
		llmtest.Rule{Match: llmtest.SystemContains(promptFloodSlow), Script: llmtest.Always(slowFlood)},
		llmtest.Rule{Match: llmtest.SystemContains(promptFloodFast), Script: llmtest.Always(llmtest.Response{
			Text: strings.Repeat(flood, 20), ChunkSize: 16})},
		llmtest.Rule{Match: llmtest.SystemContains(promptLongAnswer), Script: llmtest.Always(llmtest.Response{Text: strings.Repeat(flood, 10), ChunkSize: 4096})},
		llmtest.Rule{Match: llmtest.SystemContains(promptChat), Script: llmtest.Always(llmtest.Reply("still here"))},
	))}
	chains := map[string]string{
		"flood-timeout": chainDSL("flood-timeout", "F", nil, agentNode(promptFloodTimeout, map[string]any{"timeout": "1s"})),
		"flood-slow":    chainDSL("flood-slow", "F", nil, agentNode(promptFloodSlow, nil)),
		"flood-fast":    chainDSL("flood-fast", "F", nil, agentNode(promptFloodFast, nil)),
		"long-answer":   chainDSL("long-answer", "L", nil, agentNode(promptLongAnswer, nil)),
		"chat":          chainDSL("chat", "Chat", nil, agentNode(promptChat, nil)),
	}
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStore(e.dir, NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	e.opts = Options{Store: e.store, StreamLimits: sse.Limits{WriteTimeout: writeTimeout}}
	seen := &seenRequests{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: seen.wrap(Handler(e.opts)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(smallBuffers{ln}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e.base = "http://" + ln.Addr().String()
	return e, seen
}

// stalledRun starts a streamed run over a connection with a small receive
// buffer (64 KiB: smaller ones make Linux reset loopback connections) and
// never reads its answer.
func stalledRun(t *testing.T, e *apiEnv, path, body string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		path, strings.TrimPrefix(e.base, "http://"), len(body), body)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// waitRun waits until run id is registered, then returns when it started.
func waitRun(t *testing.T, e *apiEnv, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := e.store.runs.Get(id); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not start", id)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runEnds reports how long run id took to end, failing after within.
func runEnds(t *testing.T, e *apiEnv, id string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if _, ok := e.store.runs.Get(id); !ok {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("run %s is still going %v later: a client that stopped reading holds it", id, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// handlerReturns waits until the server has answered n requests to path
// (their handlers returned), failing after within.
func handlerReturns(t *testing.T, seen *seenRequests, path string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := 0
		for _, r := range seen.from(func(string) bool { return true }) {
			if r.path == path {
				got++
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the handler of %s still holds the stalled connection after %v", path, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that stops reading holds neither its run past the run's
// timeout nor the server: the run ends by its timeout (1s, before the
// stream's write timeout of 3s could drop the client), other requests are
// served meanwhile, and the stalled stream is dropped once its write
// timeout passes.
func TestStalledReaderKeepsTheRunTimeout(t *testing.T) {
	e, seen := slowEnv(t, 3*time.Second)
	stalledRun(t, e, "/api/v1/chains/flood-timeout/run", `{"input":"go","stream":true,"runId":"run-stalled"}`)
	waitRun(t, e, "run-stalled")
	took := runEnds(t, e, "run-stalled", 2*time.Second)
	t.Logf("the run ended %v after it started", took)
	if s := e.store.runs; s.Active() != 0 {
		t.Errorf("%d runs still active", s.Active())
	}
	if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hi"}); code != 200 || !strings.Contains(string(body), "still here") {
		t.Errorf("another run while a client is stalled: %d %s", code, body)
	}
	handlerReturns(t, seen, "/api/v1/chains/flood-timeout/run", 1, 5*time.Second)
}

// A cancel stops a run whose client stopped reading, at once (well
// before the stream's write timeout of 3s would drop the client).
func TestStalledReaderKeepsTheRunCancel(t *testing.T) {
	e, seen := slowEnv(t, 3*time.Second)
	stalledRun(t, e, "/api/v1/chains/flood-slow/run", `{"input":"go","stream":true,"runId":"run-stalled"}`)
	waitRun(t, e, "run-stalled")
	time.Sleep(700 * time.Millisecond) // the client's buffers are long full
	if code, body, _ := e.do("POST", "/api/v1/runs/run-stalled/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
	took := runEnds(t, e, "run-stalled", time.Second)
	t.Logf("the run ended %v after the cancel", took)
	if !llmAborted(e, promptFloodSlow) {
		t.Error("the LLM request was not aborted")
	}
	handlerReturns(t, seen, "/api/v1/chains/flood-slow/run", 1, 5*time.Second)
}

// A client that falls too far behind a fast stream is dropped, and its run
// cancelled as if it had gone away; the AG-UI and OpenAI streams too.
func TestStalledReaderIsDropped(t *testing.T) {
	e, seen := slowEnv(t, time.Minute)
	for _, tc := range []struct{ path, body, runID, source string }{
		{"/api/v1/chains/flood-fast/run", `{"input":"go","stream":true,"runId":"run-fast"}`, "run-fast", "run"},
		{"/api/v1/chains/flood-fast/agui", `{"runId":"run-agui","messages":[{"id":"m","role":"user","content":"go"}]}`, "run-agui", "agui"},
		{"/v1/chat/completions", `{"model":"flood-fast","stream":true,"messages":[{"role":"user","content":"go"}]}`, "", "openai"},
	} {
		cancelled := metrics.ChainRuns.WithLabelValues("flood-fast", tc.source, OutcomeCancelled)
		before := testutil.ToFloat64(cancelled)
		stalledRun(t, e, tc.path, tc.body)
		deadline := time.Now().Add(10 * time.Second)
		if tc.runID != "" {
			waitRun(t, e, tc.runID)
		}
		for testutil.ToFloat64(cancelled) == before {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the run was not cancelled when its client fell behind (%d runs active)", tc.path, e.store.runs.Active())
			}
			time.Sleep(10 * time.Millisecond)
		}
		handlerReturns(t, seen, tc.path, 1, 4*time.Second)
	}
}

// An MCP client that stops reading its tools/call answer (a long one)
// does not hold the server: the answer's writes have a deadline too.
func TestStalledMCPReaderIsDropped(t *testing.T) {
	e, seen := slowEnv(t, time.Second)
	name := ""
	list := rpc(t, e.base+"/mcp", "tools/list", nil, nil)
	tools, _ := list.result["tools"].([]any)
	for _, tl := range tools {
		if n, _ := tl.(map[string]any)["name"].(string); strings.Contains(n, "long") {
			name = n
		}
	}
	if name == "" {
		t.Fatalf("no long-answer tool in %v", list.result)
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":{"message":"go"},`+
		`"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientCapabilities":{}}}}`, name, modern)
	conn := stalledMCP(t, e, body, name)
	defer conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for e.store.runs.Active() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for e.store.runs.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the MCP run did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	handlerReturns(t, seen, "/mcp", 2, 3*time.Second)
}

// stalledMCP posts a 2026-07-28 tools/call over a connection with a small
// receive buffer and never reads the answer.
func stalledMCP(t *testing.T, e *apiEnv, body, tool string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 64<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"Mcp-Protocol-Version: %s\r\nMcp-Method: tools/call\r\nMcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(e.base, "http://"), modern, tool, len(body), body)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return conn
}
