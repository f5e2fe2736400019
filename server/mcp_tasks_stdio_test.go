package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// send writes one request (or, with id 0, a notification) on the stdio
// peer's input.
func (p *stdioPeer) send(id int, method string, params map[string]any, caps map[string]any) {
	p.t.Helper()
	if caps != nil {
		params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": modern, "io.modelcontextprotocol/clientCapabilities": caps}
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != 0 {
		msg["id"] = id
	}
	line, _ := json.Marshal(msg)
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// read is the next message on the peer's output.
func (p *stdioPeer) read() map[string]any {
	p.t.Helper()
	if !p.out.Scan() {
		p.t.Fatalf("stdout ended: %v", p.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
		p.t.Fatalf("not JSON on stdout: %q", p.out.Text())
	}
	return m
}

// TestMCPStdioTaskInput: over stdio, a task's question is shown by
// tasks/get and on a listen stream, answered with tasks/update, and the
// task completes; a listen stream the client cancels
// (notifications/cancelled) sends nothing more, and is not answered.
func TestMCPStdioTaskInput(t *testing.T) {
	dsl, err := os.ReadFile(filepath.Join(conformanceFixtures, "confirm_delete.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := chainStore(t, nil, map[string]string{"confirm_delete": string(dsl)})
	p := newStdioPeer(t, s)

	p.send(1, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{}}, withTasks)
	created := p.read()
	id, _ := created["result"].(map[string]any)["taskId"].(string)
	if id == "" {
		t.Fatalf("tools/call: %v", created)
	}
	p.send(2, "subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}, withTasks)
	if ack := p.read(); ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message on the stream: %v", ack)
	}
	var asked map[string]any
	for asked == nil {
		m := p.read()
		params, _ := m["params"].(map[string]any)
		if m["method"] != "notifications/tasks" || params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != float64(2) {
			t.Fatalf("on the stream: %v", m)
		}
		if params["status"] == "input_required" {
			asked = params
		}
	}
	if _, ok := asked["inputRequests"].(map[string]any)["confirm"]; !ok {
		t.Fatalf("input_required: %v", asked)
	}
	// The client stops listening: nothing more comes for request 2.
	p.send(0, "notifications/cancelled", map[string]any{"requestId": 2}, nil)
	p.send(3, "tasks/get", map[string]any{"taskId": id}, withTasks)
	if got := p.read(); got["id"] != float64(3) || got["result"].(map[string]any)["status"] != "input_required" {
		t.Fatalf("tasks/get: %v", got)
	}
	p.send(4, "tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"confirm": accept(map[string]any{"confirm": true})}}, withTasks)
	if ack := p.read(); ack["id"] != float64(4) || ack["result"].(map[string]any)["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v", ack)
	}
	for i := 5; ; i++ {
		p.send(i, "tasks/get", map[string]any{"taskId": id}, withTasks)
		got := p.read()
		if got["id"] != float64(i) {
			t.Fatalf("after the listen stream was cancelled: %v", got)
		}
		res := got["result"].(map[string]any)
		if res["status"] == "completed" {
			if text := res["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "deleted" {
				t.Fatalf("completed: %v", res)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
		if i > 200 {
			t.Fatalf("the task did not complete: %v", res)
		}
	}
}
