package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPStdioTasks: ruleagent mcp --stdio serves the tasks extension to a
// 2026-07-28 client on mcp-go's stdio client transport (mcp-go's client
// knows only the tasks of 2025-11-25, so the extension's requests are
// written as the extension defines them): a call becomes a task, a listen
// stream carries its status to its end and then closes with its result,
// tasks/get reads the result, tasks/cancel cancels another, and a request
// that does not declare the extension is refused with -32021.
func TestMCPStdioTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := startStdioTasks(t, ctx, "mcp", "--stdio", "--chains", slowComputeChains(t))
	request, notes := p.request, p.notes

	created, perr := request("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 1, "label": "stdio"}}, withTasksCaps)
	if perr != nil || created["resultType"] != "task" || created["status"] != "working" {
		t.Fatalf("tools/call: %v %v", created, perr)
	}
	id := created["taskId"].(string)

	// Listening: the stream's answer comes when the task has ended.
	ended := make(chan map[string]any, 1)
	go func() {
		res, _ := request("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}, withTasksCaps)
		ended <- res
	}()
	var statuses []string
	for done := false; !done; {
		select {
		case n := <-notes:
			switch n.Method {
			case "notifications/subscriptions/acknowledged":
				if ids := n.Params.AdditionalFields["notifications"].(map[string]any)["taskIds"].([]any); len(ids) != 1 || ids[0] != id {
					t.Fatalf("acknowledged: %v", n.Params)
				}
			case "notifications/tasks":
				f := n.Params.AdditionalFields
				if f["taskId"] != id {
					t.Fatalf("a notification for another task: %v", f)
				}
				statuses = append(statuses, f["status"].(string))
				if f["status"] == "completed" {
					text := f["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
					if text != "computed stdio after 1s" {
						t.Fatalf("completed notification: %v", f)
					}
					done = true
				}
			}
		case <-ctx.Done():
			t.Fatalf("no completed notification; statuses %v ", statuses)
		}
	}
	if statuses[0] != "working" {
		t.Fatalf("statuses: %v", statuses)
	}
	select {
	case res := <-ended:
		if res["resultType"] != "complete" {
			t.Fatalf("the listen stream's result: %v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listen stream did not end after its task")
	}
	got, perr := request("tasks/get", map[string]any{"taskId": id}, withTasksCaps)
	if perr != nil || got["status"] != "completed" || got["result"] == nil {
		t.Fatalf("tasks/get: %v %v", got, perr)
	}
	if _, perr := request("tasks/get", map[string]any{"taskId": id}, map[string]any{}); perr == nil || perr.Code != -32021 {
		t.Fatalf("tasks/get without the extension: %v", perr)
	}

	created, _ = request("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 2}}, withTasksCaps)
	id = created["taskId"].(string)
	if ack, perr := request("tasks/cancel", map[string]any{"taskId": id}, withTasksCaps); perr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel: %v %v", ack, perr)
	}
	if got, _ := request("tasks/get", map[string]any{"taskId": id}, withTasksCaps); got["status"] != "cancelled" {
		t.Fatalf("after tasks/cancel: %v", got)
	}

	p.stop()
}

// TestMCPStdioTaskOutlivesTheProcess: with --data, a task that ended is
// read with its result by the client that starts the command again; in
// memory (no --data) it is gone with the process.
func TestMCPStdioTaskOutlivesTheProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chains, data := slowComputeChains(t), t.TempDir()
	call := func(p *stdioTasksPeer) string {
		created, perr := p.request("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "label": "kept"}}, withTasksCaps)
		if perr != nil || created["taskId"] == nil {
			t.Fatalf("tools/call: %v %v", created, perr)
		}
		id := created["taskId"].(string)
		for {
			got, _ := p.request("tasks/get", map[string]any{"taskId": id}, withTasksCaps)
			if got["status"] == "completed" {
				return id
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	p := startStdioTasks(t, ctx, "mcp", "--stdio", "--chains", chains, "--data", data)
	id := call(p)
	p.stop()
	p = startStdioTasks(t, ctx, "mcp", "--stdio", "--chains", chains, "--data", data)
	got, perr := p.request("tasks/get", map[string]any{"taskId": id}, withTasksCaps)
	if perr != nil || got["status"] != "completed" ||
		got["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != "computed kept after 0s" {
		t.Fatalf("tasks/get after a restart on --data: %v %v", got, perr)
	}
	p.stop()

	p = startStdioTasks(t, ctx, "mcp", "--stdio", "--chains", chains)
	id = call(p)
	p.stop()
	p = startStdioTasks(t, ctx, "mcp", "--stdio", "--chains", chains)
	if _, perr := p.request("tasks/get", map[string]any{"taskId": id}, withTasksCaps); perr == nil || perr.Code != -32602 {
		t.Fatalf("tasks/get after a restart in memory: %v", perr)
	}
	p.stop()
}

var withTasksCaps = map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

// slowComputeChains is a chains folder with the slow_compute fixture.
func slowComputeChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fixture, err := os.ReadFile(filepath.Join("..", "..", "server", "testdata", "mcp-conformance", "slow_compute.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slow_compute.json"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stdioTasksPeer is the command started with args, and mcp-go's stdio
// client transport on its stdin and stdout.
type stdioTasksPeer struct {
	request func(method string, params map[string]any, caps map[string]any) (map[string]any, *mcp.JSONRPCErrorDetails)
	notes   chan mcp.JSONRPCNotification
	stop    func() // closes stdin, and waits for a clean exit
}

func startStdioTasks(t *testing.T, ctx context.Context, args ...string) *stdioTasksPeer {
	t.Helper()
	tr, c, clientOut, stderr, code := stdioCommand(t, ctx, args...)
	notes := make(chan mcp.JSONRPCNotification, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n })

	next := int64(0)
	request := func(method string, params map[string]any, caps map[string]any) (map[string]any, *mcp.JSONRPCErrorDetails) {
		t.Helper()
		next++
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": caps,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stdio-tasks-test", "version": "1"},
		}
		resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(next), Method: method, Params: params})
		if err != nil {
			t.Fatalf("%s: %v (stderr: %s)", method, err, stderr)
		}
		var result map[string]any
		if resp.Result != nil {
			if err := json.Unmarshal(resp.Result, &result); err != nil {
				t.Fatal(err)
			}
		}
		return result, resp.Error
	}

	stopped := false
	t.Cleanup(func() {
		if !stopped {
			clientOut.Close()
			<-code
		}
	})
	return &stdioTasksPeer{request: request, notes: notes, stop: func() {
		t.Helper()
		stopped = true
		clientOut.Close()
		select {
		case rc := <-code:
			if rc != 0 {
				t.Fatalf("exit %d: %s", rc, stderr)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("mcp --stdio did not exit when its input closed")
		}
	}}
}
