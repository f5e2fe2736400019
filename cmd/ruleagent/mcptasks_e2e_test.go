package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// mcpTaskCall posts one 2026-07-28 request declaring the tasks extension
// to a serve process's /mcp and returns its result or error.
func mcpTaskCall(t *testing.T, p *serverProcess, method, name string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, p.base+"/mcp", bytes.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out.Result, out.Error
}

// An MCP task outlives its process in the embedded store: after serve is
// killed (SIGKILL) and started again on the same --data, a task that
// completed is read with its result, and a task whose run died with the
// process is failed once its heartbeat is older than 15 s.
func TestMCPTaskSurvivesARestart(t *testing.T) {
	bin := buildBinary(t)
	chains := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "server", "testdata", "mcp-conformance", "slow_compute.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(chains, "slow_compute.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	p := startServer(t, bin, "http://127.0.0.1:1", "--chains", chains, "--data", data)
	start := func(seconds int) string {
		created, perr := mcpTaskCall(t, p, "tools/call", "slow_compute", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": seconds}})
		if perr != nil || created["resultType"] != "task" {
			t.Fatalf("tools/call: %v %v", created, perr)
		}
		return created["taskId"].(string)
	}
	get := func(id string) map[string]any {
		got, perr := mcpTaskCall(t, p, "tasks/get", id, map[string]any{"taskId": id})
		if perr != nil {
			t.Fatalf("tasks/get: %v", perr)
		}
		return got
	}
	quick, long := start(0), start(600)
	died := time.Now()
	for deadline := time.Now().Add(10 * time.Second); get(quick)["status"] != "completed"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the quick task: %v", get(quick))
		}
	}
	p.kill(syscall.SIGKILL)

	p = startServer(t, bin, "http://127.0.0.1:1", "--chains", chains, "--data", data)
	done := get(quick)
	content, _ := done["result"].(map[string]any)["content"].([]any)
	if done["status"] != "completed" || len(content) != 1 || content[0].(map[string]any)["text"] != "computed  after 0s" {
		t.Fatalf("the completed task after the restart: %v", done)
	}
	if got := get(long); got["status"] != "working" {
		t.Fatalf("the dead run's task before its heartbeat is stale: %v", got)
	}
	time.Sleep(time.Until(died.Add(16 * time.Second)))
	failed := get(long)
	if e, _ := failed["error"].(map[string]any); failed["status"] != "failed" || e["code"] != float64(-32603) {
		t.Fatalf("the dead run's task: %v", failed)
	}
}
