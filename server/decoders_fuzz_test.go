package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
)

// The request decoders are fuzzed through the real handler, in process,
// against chains that run no model: what a client sends is decoded,
// checked and run exactly as it would be, and whatever the bytes, the
// answer must be one the protocol allows.

// fuzzHandler is the API over two chains: "echo", a business chain that
// returns its input, and "tool", the same exposed as an MCP tool.
func fuzzHandler(f *testing.F) http.Handler {
	f.Helper()
	dir := f.TempDir()
	echo := `return {msg: msg, metadata: metadata, msgType: msgType};`
	chains := map[string]string{
		"echo": jsDSL("echo", "Echo", nil, echo),
		"tool": jsDSL("tool", "Tool", map[string]any{"mcp": true, "description": "Echoes its arguments."}, echo),
	}
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(dir, id+".json"), []byte(dsl), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{Logger: slog.New(slog.DiscardHandler)})
	if len(errs) > 0 {
		f.Fatal(errs)
	}
	f.Cleanup(s.Close)
	return Handler(Options{Store: s, MaxBodyBytes: 1 << 20})
}

// serve sends one request to h, bounded in time (a stream that waits,
// such as subscriptions/listen, ends with the context).
func serve(h http.Handler, method, path string, body []byte, hdr map[string]string) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	req.Host = "127.0.0.1:8080"
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// dataLines are the data payloads of an event stream.
func dataLines(body []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			out = append(out, append([]byte(nil), d...))
		}
	}
	return out
}

// checkErrorBody fails t unless body is the API's JSON error.
func checkErrorBody(t *testing.T, status int, body []byte, field string) {
	t.Helper()
	if !json.Valid(body) || !gjson.GetBytes(body, field).Exists() {
		t.Fatalf("status %d without an error body: %q", status, body)
	}
}

// FuzzAGUIRunAgentInput: any body posted to the AG-UI route gets either a
// JSON error (4xx) or an event stream that the AG-UI rules accept, ending
// in RUN_FINISHED or RUN_ERROR; the messages the run is given parse as the
// agent node reads them, or fail with an error.
func FuzzAGUIRunAgentInput(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t-1","runId":"r-1","messages":[{"id":"m1","role":"user","content":"hi"}],"tools":[],"context":[],"state":{},"forwardedProps":{}}`,
		`{"messages":[{"role":"user","content":"hi"},{"id":"a1","role":"assistant","content":"","toolCalls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":"{}"}}]},{"id":"t1","role":"tool","toolCallId":"c1","content":"yes"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"url","value":"https://example.com/a.png"}}]}]}`,
		`{"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"confirm","description":"Asks.","parameters":{"type":"object","properties":{"q":{"type":"string"}}}}],"forwardedProps":{"ruleagent":{"userId":"u1","subagentEvents":true}}}`,
		`{"messages":[{"role":"activity","content":"x"},{"role":"reasoning","content":"y"},{"role":"user","content":"z","subagentRunId":"s"}]}`,
		`{"resume":[{"interruptId":"int-1","status":"resolved","payload":{"approved":true}}]}`,
		`{"messages":"not an array"}`,
		`{"messages":[]}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := serve(h, http.MethodPost, "/api/v1/chains/echo/agui", body, nil)
		if rec.Code >= 400 {
			if rec.Code >= 500 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			checkErrorBody(t, rec.Code, rec.Body.Bytes(), "error")
			return
		}
		evs := dataLines(rec.Body.Bytes())
		if len(evs) == 0 {
			t.Fatalf("status %d and no events: %q", rec.Code, rec.Body)
		}
		for _, v := range aguicheck.Check(evs) {
			t.Errorf("AG-UI violation: %v", v)
		}
		if last := gjson.GetBytes(evs[len(evs)-1], "type").String(); last != string(events.RunFinished) && last != string(events.RunError) {
			t.Fatalf("the stream ends with %s", evs[len(evs)-1])
		}
		var in runAgentInput
		if json.Unmarshal(body, &in) == nil && len(in.Messages) > 0 {
			checkParsed(t, []byte(`{"messages":`+string(in.Messages)+`}`))
		}
	})
}

// checkParsed reads input as the agent node does: a conversation whose
// messages have a known role, tool messages answering a call, or an error.
func checkParsed(t *testing.T, input []byte) {
	t.Helper()
	msgs, err := agent.ParseInput(input)
	if err != nil {
		return
	}
	for i, m := range msgs {
		switch m.Role {
		case events.RoleSystem, events.RoleDeveloper, events.RoleUser, events.RoleAssistant:
		case events.RoleTool:
			if m.ToolCallID == "" {
				t.Fatalf("message %d: a tool message without its call: %+v", i, m)
			}
		default:
			t.Fatalf("message %d: role %q", i, m.Role)
		}
	}
}

// FuzzOpenAIChatRequest: any body posted to /v1/chat/completions (with or
// without an Idempotency-Key) gets an OpenAI error object (4xx), a
// chat.completion, or a stream of chat.completion.chunk events ending in
// [DONE], each of which openai-go decodes.
func FuzzOpenAIChatRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"echo","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"echo","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`,
		`{"model":"echo","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],"user":"u1","metadata":{"threadId":"t-1"}}`,
		`{"model":"echo","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"confirm","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"yes"}],"tools":[{"type":"function","function":{"name":"confirm","parameters":{"type":"object"}}}]}`,
		`{"model":"echo","tool_activity":false,"temperature":0.2,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"no-such-chain","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"echo","messages":[]}`,
		`{"model":"echo","tools":[{"type":"retrieval"}],"messages":[{"role":"user","content":"hi"}]}`,
		`not json`,
	} {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "key-1")
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		rec := serve(h, http.MethodPost, "/v1/chat/completions", body, map[string]string{"Idempotency-Key": key})
		out := rec.Body.Bytes()
		switch {
		case rec.Code >= 500:
			t.Fatalf("status %d: %s", rec.Code, out)
		case rec.Code >= 400:
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
				} `json:"error"`
			}
			if json.Unmarshal(out, &e) != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("status %d without an OpenAI error: %q", rec.Code, out)
			}
		case strings.HasPrefix(rec.Result().Header.Get("Content-Type"), "text/event-stream"):
			frames := dataLines(out)
			if len(frames) == 0 || string(frames[len(frames)-1]) != "[DONE]" {
				t.Fatalf("a stream that does not end with [DONE]: %q", out)
			}
			for _, fr := range frames[:len(frames)-1] {
				var chunk openai.ChatCompletionChunk
				if gjson.GetBytes(fr, "error").Exists() {
					continue
				}
				if err := json.Unmarshal(fr, &chunk); err != nil || chunk.Object != "chat.completion.chunk" {
					t.Fatalf("not a chunk (%v): %s", err, fr)
				}
			}
		default:
			var c openai.ChatCompletion
			if err := json.Unmarshal(out, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
				t.Fatalf("not a chat.completion (%v): %s", err, out)
			}
		}
	})
}

// FuzzMCPRequest: any JSON-RPC message posted to /mcp, with the headers a
// 2026-07-28 client derives from it, is answered without a server error:
// with a JSON-RPC response carrying the request's id (as JSON, or as the
// last event of a stream), with 202 for a notification, or with an HTTP
// error for what the transport refuses.
func FuzzMCPRequest(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"fuzz","version":"1"}}`
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"tool","arguments":{"x":1},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool","arguments":{},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_rule_chains","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"tool","arguments":{},"requestState":"bogus","inputResponses":{"q":{"action":"accept","content":{}}},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tool","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01"}}}`,
	} {
		f.Add([]byte(s))
	}
	h := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		method := gjson.GetBytes(body, "method").String()
		if method == "subscriptions/listen" {
			return // a stream that stays open: the listen tests drive it
		}
		hdr := map[string]string{"Accept": "application/json, text/event-stream"}
		if v := gjson.GetBytes(body, `params._meta.io\.modelcontextprotocol/protocolVersion`); v.Exists() {
			hdr["Mcp-Protocol-Version"] = v.String()
			hdr["Mcp-Method"] = method
			if name := gjson.GetBytes(body, "params.name"); name.Exists() {
				hdr["Mcp-Name"] = name.String()
			}
		}
		rec := serve(h, http.MethodPost, "/mcp", body, hdr)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %s: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != http.StatusOK {
			return
		}
		var msgs [][]byte
		if strings.HasPrefix(rec.Result().Header.Get("Content-Type"), "text/event-stream") {
			msgs = dataLines(rec.Body.Bytes())
		} else if b := bytes.TrimSpace(rec.Body.Bytes()); len(b) > 0 {
			msgs = [][]byte{b}
		}
		if len(msgs) == 0 {
			t.Fatalf("200 with no message for %s", body)
		}
		for _, m := range msgs {
			if !json.Valid(m) || gjson.GetBytes(m, "jsonrpc").String() != "2.0" {
				t.Fatalf("not a JSON-RPC message: %q", m)
			}
		}
		last := msgs[len(msgs)-1]
		if id := gjson.GetBytes(body, "id"); id.Exists() && gjson.GetBytes(last, "method").String() == "" &&
			idValue(gjson.GetBytes(last, "id")) != idValue(id) {
			t.Fatalf("the response's id %s is not the request's %s", gjson.GetBytes(last, "id").Raw, id.Raw)
		}
	})
}

// idValue is a JSON-RPC id as a comparable value: a string or a number, or
// nil for anything else (which names no request).
func idValue(r gjson.Result) any {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Number:
		return r.Num
	}
	return nil
}
