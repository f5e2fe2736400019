package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// modern is the stateless protocol revision the raw requests speak.
const modern = "2026-07-28"

// wireReply is what /mcp answered one raw request: the HTTP status, the
// JSON-RPC response, and the notifications sent before it on its stream.
type wireReply struct {
	status        int
	result        map[string]any
	err           map[string]any
	notifications []map[string]any
}

var rpcID atomic.Int64

// rpc posts one 2026-07-28 request to url, with the _meta and headers the
// revision asks for: protocol version, client capabilities (caps), and
// Mcp-Method / Mcp-Name.
func rpc(t *testing.T, url, method string, params map[string]any, caps map[string]any) wireReply {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	meta, _ := params["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	if caps == nil {
		caps = map[string]any{}
	}
	meta["io.modelcontextprotocol/protocolVersion"] = modern
	meta["io.modelcontextprotocol/clientCapabilities"] = caps
	meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "ruleagent-test", "version": "1"}
	params["_meta"] = meta
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcID.Add(1), "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", modern)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readReply(t, resp)
}

// readReply reads a JSON body, or an SSE stream of messages.
func readReply(t *testing.T, resp *http.Response) wireReply {
	t.Helper()
	r := wireReply{status: resp.StatusCode}
	var msgs [][]byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, []byte(data))
			}
		}
	} else {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(b)) > 0 {
			msgs = append(msgs, b)
		}
	}
	for _, m := range msgs {
		var v struct {
			ID     any            `json:"id"`
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatalf("not JSON-RPC: %s", m)
		}
		switch {
		case v.Method != "" && v.ID == nil:
			v.Params["method"] = v.Method
			r.notifications = append(r.notifications, v.Params)
		case v.Method != "":
			t.Fatalf("the server sent a request on the response stream: %s", m)
		default:
			r.result, r.err = v.Result, v.Error
		}
	}
	return r
}

// call posts a tools/call.
func (w wireReply) text() string {
	var parts []string
	content, _ := w.result["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok && m["type"] == "text" {
			parts = append(parts, m["text"].(string))
		}
	}
	return strings.Join(parts, "\n")
}

func toolsCall(t *testing.T, url, name string, extra map[string]any, caps map[string]any) wireReply {
	t.Helper()
	params := map[string]any{"name": name, "arguments": map[string]any{}}
	for k, v := range extra {
		params[k] = v
	}
	return rpc(t, url, "tools/call", params, caps)
}

// elicitCaps declares the elicitation capability.
var elicitCaps = map[string]any{"elicitation": map[string]any{}}

// inputRequests returns an input_required result's questions by key.
func (w wireReply) inputRequests(t *testing.T) map[string]any {
	t.Helper()
	if w.result["resultType"] != "input_required" {
		t.Fatalf("not input_required: status %d, result %v, error %v", w.status, w.result, w.err)
	}
	reqs, _ := w.result["inputRequests"].(map[string]any)
	return reqs
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}
