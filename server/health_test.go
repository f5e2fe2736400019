package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/state/health"
)

// getJSON GETs base+path and decodes its JSON body.
func getJSON(t *testing.T, base, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, body
}

// /readyz is ready while every ready probe is; a failing probe makes it
// 503 naming the check and what is wrong, while /healthz stays 200 (the
// process is alive) and says ready false; a probe that is only reported
// does not make it unready. Both answer without the token.
func TestReadyzSaysWhichCheckFails(t *testing.T) {
	st, errs := OpenStoreWith("", NewConfig(nil), StoreOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { st.Close() })
	redisUp := true
	model := health.NewModel("r1")
	model.Add(health.ProbeFunc(func(context.Context) health.Check {
		c := health.Check{Name: "redis", OK: redisUp}
		if !redisUp {
			c.Detail = "dial tcp 127.0.0.1:6379: connection refused"
		}
		return c
	}), true)
	model.Add(health.ProbeFunc(func(context.Context) health.Check {
		return health.Check{Name: "chains", OK: false, Detail: "escape differs"}
	}), false)
	base := serveLoopback(t, Handler(Options{Store: st, Readiness: model, Token: "secret"}))

	code, body := getJSON(t, base, "/readyz")
	if code != 200 || body["status"] != "ok" || body["replica"] != "r1" {
		t.Fatalf("ready: %d %v", code, body)
	}
	redisUp = false
	code, body = getJSON(t, base, "/readyz")
	if code != 503 || body["status"] != "unavailable" {
		t.Fatalf("redis down: %d %v", code, body)
	}
	checks, _ := body["checks"].([]any)
	if first, _ := checks[0].(map[string]any); len(checks) != 2 || first["name"] != "redis" || first["ok"] != false ||
		first["detail"] != "dial tcp 127.0.0.1:6379: connection refused" {
		t.Errorf("checks: %v", checks)
	}
	code, body = getJSON(t, base, "/healthz")
	if code != 200 || body["status"] != "ok" || body["ready"] != false {
		t.Errorf("healthz with redis down: %d %v", code, body)
	}
}

// A draining store (SIGTERM) is not ready, refuses new runs on every run
// route with 503 and Retry-After (MCP's tools/call too), and still
// answers the rest.
func TestDrainingRefusesNewRuns(t *testing.T) {
	st, errs := OpenStoreWith("", NewConfig(map[string]string{"llm_url": "http://127.0.0.1:1/v1", "model": "m", "workspace": t.TempDir()}), StoreOptions{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Save("hello", []byte(govAgent("hello", "You are hello.", nil))); err != nil {
		t.Fatal(err)
	}
	base := serveLoopback(t, Handler(Options{Store: st}))
	if code, _ := getJSON(t, base, "/readyz"); code != 200 {
		t.Fatalf("readyz before drain: %d", code)
	}
	st.Drain()
	code, body := getJSON(t, base, "/readyz")
	if code != 503 || body["status"] != "draining" || body["draining"] != true {
		t.Errorf("readyz while draining: %d %v", code, body)
	}
	for _, path := range []string{"/api/v1/chains/hello/run", "/api/v1/chains/hello/agui", "/v1/chat/completions"} {
		body := `{"input":"hi"}`
		if strings.HasPrefix(path, "/v1/") {
			body = `{"model":"hello","messages":[{"role":"user","content":"hi"}]}`
		}
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var b map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&b)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(fmt.Sprint(b), "draining") {
			t.Errorf("%s while draining: %d %v", path, resp.StatusCode, b)
		}
	}
	// The MCP server refuses it too, as a tool error (the self server an
	// agent calls, and /mcp, which the drain answers 503 before it).
	answer := st.MCP().HandleMessage(t.Context(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","arguments":{"message":"hi"}}}`))
	if b, _ := json.Marshal(answer); !strings.Contains(string(b), `"isError":true`) || !strings.Contains(string(b), ErrDraining.Error()) {
		t.Errorf("MCP run while draining: %s", b)
	}
	if code, _ := getJSON(t, base, "/healthz"); code != 200 {
		t.Errorf("healthz while draining: %d", code)
	}
}
