package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/server/mcpserve"
)

// stdioPeer drives ServeStdio with raw JSON-RPC lines, as a 2026-07-28
// client does: each request carries its version and capabilities in _meta.
type stdioPeer struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	id   int
	done chan error
}

func newStdioPeer(t *testing.T, s *Store) *stdioPeer {
	serverIn, in := io.Pipe()
	outR, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &stdioPeer{t: t, in: in, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	p.out.Buffer(make([]byte, 1<<20), 1<<20)
	go func() {
		p.done <- s.ServeStdio(ctx, serverIn, serverOut, nil)
		serverOut.Close()
	}()
	t.Cleanup(func() {
		in.Close()
		cancel()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not end when its input closed")
		}
	})
	return p
}

// call sends a tools/call and returns the answer with the same id (the
// notifications before it are skipped).
func (p *stdioPeer) call(name string, extra, caps map[string]any) (result, rpcErr map[string]any) {
	p.t.Helper()
	p.id++
	params := map[string]any{"name": name, "arguments": map[string]any{}, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modern,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stdio-test", "version": "1"},
	}}
	for k, v := range extra {
		params[k] = v
	}
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.id, "method": "tools/call", "params": params})
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		p.t.Fatal(err)
	}
	for p.out.Scan() {
		var m struct {
			ID     *int           `json:"id"`
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
			p.t.Fatalf("not JSON on stdout: %q", p.out.Text())
		}
		if m.ID != nil && *m.ID == p.id {
			return m.Result, m.Error
		}
	}
	p.t.Fatalf("stdout ended: %v", p.out.Err())
	return nil, nil
}

// TestMCPStdioProtocolErrorCodes: over stdio, as over /mcp, a 2026-07-28
// client that did not declare elicitation gets -32021 naming the
// capability, and a requestState that fails its check gets -32602; mcp-go
// alone answers both with -32603. The right answer still completes the run.
func TestMCPStdioProtocolErrorCodes(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"greet": greetDSL("greet")})
	p := newStdioPeer(t, s)

	// Twice: the second identical refusal is rewritten too.
	for range 2 {
		_, e := p.call("greet", nil, map[string]any{})
		if e == nil || e["code"] != float64(mcpserve.CodeMissingCapability) || !strings.Contains(e["message"].(string), "What is your name?") {
			t.Fatalf("no elicitation capability: %v", e)
		}
		data, _ := e["data"].(map[string]any)
		if required, _ := data["requiredCapabilities"].(map[string]any); required["elicitation"] == nil {
			t.Fatalf("the error does not name the capability: %v", e)
		}
	}

	first, e := p.call("greet", nil, elicitCaps)
	if e != nil || first["resultType"] != "input_required" {
		t.Fatalf("input_required expected: %v %v", first, e)
	}
	state, _ := first["requestState"].(string)
	answer := map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}
	if _, e := p.call("greet", map[string]any{"requestState": state + "x", "inputResponses": answer}, elicitCaps); e == nil || e["code"] != float64(mcpserve.CodeInvalidParams) {
		t.Fatalf("an altered state: %v", e)
	}
	done, e := p.call("greet", map[string]any{"requestState": state, "inputResponses": answer}, elicitCaps)
	if e != nil || done["resultType"] != "complete" {
		t.Fatalf("the retry: %v %v", done, e)
	}
	if content, _ := done["content"].([]any); len(content) != 1 || content[0].(map[string]any)["text"] != "Hello, Ada!" {
		t.Fatalf("the retry's answer: %v", done)
	}
}
