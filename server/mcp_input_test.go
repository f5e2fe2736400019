package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/mcpserve"
)

// nameSchema asks for a name.
var nameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}

// greetDSL asks for the user's name (a test/ask node, through the input
// hook), then greets them; a mark node records that the run went on.
func greetDSL(id string) string {
	nodes := []any{
		map[string]any{"id": "ask", "type": "test/ask", "name": "Ask the name",
			"configuration": map[string]any{"id": "user_name", "message": "What is your name?", "schema": nameSchema}},
		map[string]any{"id": "greet", "type": "jsTransform", "name": "Greet", "configuration": map[string]any{
			"jsScript": "return {msg: msg.action === 'accept' ? 'Hello, ' + msg.content.name + '!' : 'You said ' + msg.action + '.', metadata: metadata, msgType: msgType};"}},
	}
	b, _ := json.MarshalIndent(map[string]any{
		"ruleChain": map[string]any{"id": id, "name": "Greeter", "additionalInfo": map[string]any{
			"mcp": true, "description": "Asks your name, then greets you.", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}},
		"metadata": map[string]any{"firstNodeIndex": 0, "nodes": nodes,
			"connections": []any{map[string]any{"fromId": "ask", "toId": "greet", "type": "Success"}}},
	}, "", "  ")
	return string(b)
}

// chainStore opens a store of the given chain files (name -> DSL).
func chainStore(t *testing.T, globals map[string]string, chains map[string]string) *Store {
	t.Helper()
	dir := t.TempDir()
	for name, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, errs := OpenStore(dir, NewConfig(globals))
	t.Cleanup(s.Close)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return s
}

// wireLog records the JSON-RPC bodies a client posts.
type wireLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Method == http.MethodPost {
		b, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		l.mu.Lock()
		l.bodies = append(l.bodies, string(b))
		l.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

// posted returns the bodies posted whose method is m.
func (l *wireLog) posted(m string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, b := range l.bodies {
		var v map[string]any
		if json.Unmarshal([]byte(b), &v) == nil && v["method"] == m {
			out = append(out, v)
		}
	}
	return out
}

// TestMCPInputBothEras: a chain whose node asks for a person's input is
// answered by an elicitation handler of the mcp-go client, over HTTP, in
// both protocol eras: a 2026-07-28 client gets input_required and retries
// the call with the answer and the requestState (two tools/call on the
// wire, no request from the server); a 2025-11-25 client gets an
// elicitation/create request during the one call.
func TestMCPInputBothEras(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"greet": greetDSL("greet")})
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	for _, tc := range []struct {
		version   string
		wantCalls int
	}{{modern, 2}, {"2025-11-25", 1}} {
		t.Run(tc.version, func(t *testing.T) {
			log := &wireLog{}
			var (
				mu    sync.Mutex
				asked []mcp.ElicitationParams
			)
			handler := elicitFunc(func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				mu.Lock()
				asked = append(asked, req.Params)
				mu.Unlock()
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"}}}, nil
			})
			tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Transport: log}))
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(tr, client.WithProtocolVersion(tc.version), client.WithElicitationHandler(handler))
			t.Cleanup(func() { _ = c.Close() })
			ctx := context.Background()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
				t.Fatal(err)
			}
			if got := c.ProtocolVersion(); got != tc.version {
				t.Fatalf("negotiated %s, want %s", got, tc.version)
			}
			res := callTool(t, c, "greet", map[string]any{}, nil)
			if res.IsError || text(res) != "Hello, Ada!" {
				t.Fatalf("result %v %q", res.IsError, text(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || asked[0].Message != "What is your name?" {
				t.Fatalf("the user was asked %+v", asked)
			}
			if b, _ := json.Marshal(asked[0].RequestedSchema); !strings.Contains(string(b), `"name"`) {
				t.Errorf("the question's schema did not reach the client: %s", b)
			}
			calls := log.posted("tools/call")
			if len(calls) != tc.wantCalls {
				t.Fatalf("%d tools/call posted, want %d", len(calls), tc.wantCalls)
			}
			if tc.version == modern {
				retry, _ := calls[1]["params"].(map[string]any)
				if retry["requestState"] == nil || retry["inputResponses"] == nil {
					t.Errorf("the retry carries no requestState or inputResponses: %v", retry)
				}
			}
		})
	}
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// TestMCPInputMissingCapability: a client that did not declare elicitation
// is never asked. A 2026-07-28 client gets -32021 naming the capability,
// with HTTP 400, and the question in the message; a 2025-11-25 client gets
// a tool error that says what was asked. Either way the run stops there.
func TestMCPInputMissingCapability(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"greet": greetDSL("greet")})
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"

	r := toolsCall(t, url, "greet", nil, map[string]any{})
	if r.status != http.StatusBadRequest || r.err == nil || r.err["code"] != float64(mcpserve.CodeMissingCapability) {
		t.Fatalf("status %d, error %v, result %v", r.status, r.err, r.result)
	}
	data, _ := r.err["data"].(map[string]any)
	required, _ := data["requiredCapabilities"].(map[string]any)
	if _, ok := required["elicitation"].(map[string]any); !ok || !strings.Contains(r.err["message"].(string), "What is your name?") {
		t.Errorf("the error does not name the capability and the question: %v", r.err)
	}

	c, _ := connect(t, s.MCP(), "2025-11-25")
	res := callTool(t, c, "greet", map[string]any{}, nil)
	if !res.IsError || !strings.Contains(text(res), "did not declare the elicitation capability") || !strings.Contains(text(res), "What is your name?") {
		t.Fatalf("legacy client: isError %v, %q", res.IsError, text(res))
	}
}

// TestMCPInputRequestState: the requestState of a waiting run is signed and
// single-use: an altered one, one given to another tool, and one already
// answered are refused with -32602 (HTTP 400); a malformed answer is
// refused without consuming the state; the right answer resumes the run.
func TestMCPInputRequestState(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"greet": greetDSL("greet"), "greet2": greetDSL("greet2")})
	url := serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	first := toolsCall(t, url, "greet", nil, elicitCaps)
	if _, ok := first.inputRequests(t)["user_name"]; !ok {
		t.Fatalf("no user_name question: %v", first.result)
	}
	state, _ := first.result["requestState"].(string)
	answer := map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}
	refused := func(what string, r wireReply) {
		t.Helper()
		if r.status != http.StatusBadRequest || r.err == nil || r.err["code"] != float64(mcpserve.CodeInvalidParams) {
			t.Errorf("%s: status %d, error %v, result %v", what, r.status, r.err, r.result)
		}
	}
	refused("an altered state", toolsCall(t, url, "greet", map[string]any{"requestState": state + "x", "inputResponses": answer}, elicitCaps))
	refused("another tool's state", toolsCall(t, url, "greet2", map[string]any{"requestState": state, "inputResponses": answer}, elicitCaps))
	refused("an answer that breaks the schema", toolsCall(t, url, "greet", map[string]any{"requestState": state,
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": 7})}}, elicitCaps))
	refused("an unknown action", toolsCall(t, url, "greet", map[string]any{"requestState": state,
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "maybe"}}}, elicitCaps))

	done := toolsCall(t, url, "greet", map[string]any{"requestState": state, "inputResponses": answer}, elicitCaps)
	if done.result["resultType"] != "complete" || done.text() != "Hello, Ada!" {
		t.Fatalf("the retry: %d %v %v", done.status, done.result, done.err)
	}
	refused("an answered state", toolsCall(t, url, "greet", map[string]any{"requestState": state, "inputResponses": answer}, elicitCaps))

	// Declining is an answer too.
	again := toolsCall(t, url, "greet", nil, elicitCaps)
	declined := toolsCall(t, url, "greet", map[string]any{"requestState": again.result["requestState"],
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "decline"}}}, elicitCaps)
	if declined.text() != "You said decline." {
		t.Fatalf("declined: %v %v", declined.result, declined.err)
	}
}

// TestMCPInputTimeout: a run whose client never retries is a checkpoint
// that expires after InputTimeout; its state is then refused.
func TestMCPInputTimeout(t *testing.T) {
	s := chainStore(t, nil, map[string]string{"greet": greetDSL("greet")})
	ct := mcpserve.New(mcpHost{s}, MCPOptions{InputTimeout: 50 * time.Millisecond})
	t.Cleanup(ct.Close)
	out := ct.Call(context.Background(), "greet", mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true})
	if len(out.Questions) != 1 || out.State == "" {
		t.Fatalf("no question: %+v", out)
	}
	if list, err := s.checkpoints.List(t.Context()); err != nil || len(list) != 1 {
		t.Fatalf("checkpoints %v, %v: want the paused call's", list, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := s.checkpoints.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the paused call never expired")
		}
		time.Sleep(5 * time.Millisecond)
	}
	late := ct.Call(context.Background(), "greet", mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true,
		State: out.State, Responses: map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}})
	if late.Err == nil || late.Err.Code != mcpserve.CodeInvalidParams || !strings.Contains(late.Err.Message, "input timeout") {
		t.Fatalf("a late answer: %+v", late)
	}
}

// carefulDSL is the reader agent with every call of read needing approval.
const carefulDSL = `{
  "ruleChain": {"id": "careful", "name": "Careful reader"},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Agent",
    "configuration": {"url": "${global.llm_url}", "model": "${global.model}", "key": "sk-test", "systemPrompt": "You are reader.",
      "workspace": "${global.workspace}", "tools": [{"type": "builtin", "name": "read"}], "approval": {"tools": ["read"]}}}],
    "connections": []}
}`

// TestMCPApprovalAsksTheClient: an agent served over MCP whose tool call
// needs approval (the node's approval setting) asks the MCP client: a
// 2026-07-28 client answers input_required; accepted, the call runs;
// declined, the model reads the refusal and the run goes on.
func TestMCPApprovalAsksTheClient(t *testing.T) {
	e := newMCPEnvWith(t, map[string][]byte{"careful.json": []byte(carefulDSL)})
	url := serveLoopback(t, Handler(Options{Store: e.store})) + "/mcp"
	args := map[string]any{"arguments": map[string]any{"message": "What do the notes say?"}}

	first := toolsCall(t, url, "careful", args, elicitCaps)
	var key string
	for k, v := range first.inputRequests(t) {
		key = k
		params, _ := v.(map[string]any)["params"].(map[string]any)
		if msg, _ := params["message"].(string); !strings.HasPrefix(msg, `Approve read {"path":"notes.txt"}`) {
			t.Errorf("the question: %q", msg)
		}
	}
	done := toolsCall(t, url, "careful", map[string]any{"arguments": args["arguments"], "requestState": first.result["requestState"],
		"inputResponses": map[string]any{key: accept(map[string]any{})}}, elicitCaps)
	if done.text() != readerAnswer {
		t.Fatalf("approved: %v %v", done.result, done.err)
	}
	if res := lastToolResult(t, e); !strings.Contains(res, readerNotes) {
		t.Errorf("the approved read returned %q", res)
	}

	again := toolsCall(t, url, "careful", args, elicitCaps)
	for k := range again.inputRequests(t) {
		key = k
	}
	declined := toolsCall(t, url, "careful", map[string]any{"arguments": args["arguments"], "requestState": again.result["requestState"],
		"inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}, elicitCaps)
	if declined.result["resultType"] != "complete" {
		t.Fatalf("declined: %v %v", declined.result, declined.err)
	}
	if res := lastToolResult(t, e); !strings.Contains(res, "declined") || strings.Contains(res, readerNotes) {
		t.Errorf("the declined read returned %q", res)
	}
}

// lastToolResult is the last tool result the scripted model was sent.
func lastToolResult(t *testing.T, e *mcpEnv) string {
	t.Helper()
	reqs := e.model.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if res := reqs[i].ToolResults(); len(res) > 0 {
			return res[len(res)-1].Content
		}
	}
	t.Fatal("the model was sent no tool result")
	return ""
}
