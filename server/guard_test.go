package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

// rawReq is a request as a browser (or an attacker's page) would send it:
// exactly the headers given, nothing added.
type rawReq struct {
	method, path, body string
	host               string // the Host header; the server's address when empty
	hdr                map[string]string
}

func (e *apiEnv) raw(r rawReq) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if r.body != "" {
		rd = strings.NewReader(r.body)
	}
	req, err := http.NewRequest(r.method, e.base+r.path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.host != "" {
		req.Host = r.host
	}
	for k, v := range r.hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// port is the server's port, for Host and Origin headers naming it.
func (e *apiEnv) port() string {
	u, _ := url.Parse(e.base)
	return u.Port()
}

// A chain an attacker would deploy: a bash tool with the sandbox off.
const pwnedChain = `{"ruleChain":{"id":"pwned","name":"Pwned"},"metadata":{"nodes":[{"id":"agent","type":"ai/agent","name":"A",
 "configuration":{"systemPrompt":"You are the shell agent.","tools":[{"type":"builtin","name":"bash","config":{"sandbox":"off"}}]}}],"connections":[]}}`

// guardEnv serves the API test chains with a session store, so that every
// route family answers.
func guardEnv(t *testing.T, opts Options, so StoreOptions) *apiEnv {
	t.Helper()
	e := &apiEnv{t: t, llm: llmtest.NewServer(t, apiScript()), dir: t.TempDir()}
	for id, dsl := range testChains() {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"})
	components.RegisterSessions(&cfg, sessions.NewMemory())
	var errs []error
	e.store, errs = OpenStoreWith(e.dir, cfg, so)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	opts.Store = e.store
	e.opts = opts
	e.base = serveLoopback(t, Handler(opts))
	return e
}

// A page on a rebound name (DNS rebinding: attacker.example resolves to
// 127.0.0.1) reaches no route: every route family answers 403 in its API's
// error shape, and nothing runs, deploys or is deleted.
func TestRebindingHostRefusedOnEveryRoute(t *testing.T) {
	e := guardEnv(t, Options{}, StoreOptions{})
	host := "attacker.example:" + e.port()
	origin := "http://" + host
	browser := func(ct string) map[string]string {
		h := map[string]string{"Origin": origin, "Sec-Fetch-Site": "same-origin"}
		if ct != "" {
			h["Content-Type"] = ct
		}
		return h
	}
	type shape int
	const (
		apiShape shape = iota
		openAIShape
		jsonRPCShape
	)
	cases := []struct {
		name string
		req  rawReq
		want shape
	}{
		{"editor", rawReq{method: "GET", path: "/"}, apiShape},
		{"healthz", rawReq{method: "GET", path: "/healthz"}, apiShape},
		{"metrics", rawReq{method: "GET", path: "/metrics"}, apiShape},
		{"list chains", rawReq{method: "GET", path: "/api/v1/chains"}, apiShape},
		{"read chain", rawReq{method: "GET", path: "/api/v1/chains/chat"}, apiShape},
		{"deploy chain", rawReq{method: "PUT", path: "/api/v1/chains/pwned", body: pwnedChain, hdr: browser("application/json")}, apiShape},
		{"delete chain", rawReq{method: "DELETE", path: "/api/v1/chains/chat", hdr: browser("")}, apiShape},
		{"run", rawReq{method: "POST", path: "/api/v1/chains/chat/run", body: `{"input":"hi"}`, hdr: browser("application/json")}, apiShape},
		{"agui", rawReq{method: "POST", path: "/api/v1/chains/chat/agui", body: `{"messages":[{"id":"m","role":"user","content":"hi"}]}`,
			hdr: browser("application/json")}, apiShape},
		{"runs", rawReq{method: "GET", path: "/api/v1/runs"}, apiShape},
		{"discover", rawReq{method: "POST", path: "/api/v1/tools/mcp/discover", body: `{"type":"mcp","name":"x","config":{"command":"true"}}`,
			hdr: browser("application/json")}, apiShape},
		{"sessions", rawReq{method: "GET", path: "/api/v1/sessions"}, apiShape},
		{"delete session", rawReq{method: "DELETE", path: "/api/v1/sessions/chat:thread:t1", hdr: browser("")}, apiShape},
		{"models", rawReq{method: "GET", path: "/v1/models"}, openAIShape},
		{"chat completions", rawReq{method: "POST", path: "/v1/chat/completions", body: `{"model":"chat","messages":[{"role":"user","content":"hi"}]}`,
			hdr: browser("application/json")}, openAIShape},
		{"mcp", rawReq{method: "POST", path: "/mcp", hdr: browser("application/json"),
			body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
			jsonRPCShape},
	}
	for _, tc := range cases {
		tc.req.host = host
		code, body, _ := e.raw(tc.req)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", tc.name, code, body)
			continue
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Errorf("%s: the refusal is not JSON: %s", tc.name, body)
			continue
		}
		msg := ""
		switch tc.want {
		case apiShape:
			msg, _ = got["error"].(string)
		case openAIShape:
			inner, _ := got["error"].(map[string]any)
			msg, _ = inner["message"].(string)
			if inner["code"] != "host_not_allowed" {
				t.Errorf("%s: OpenAI error code %v", tc.name, inner["code"])
			}
		case jsonRPCShape:
			inner, _ := got["error"].(map[string]any)
			msg, _ = inner["message"].(string)
			if got["jsonrpc"] != "2.0" || inner["code"] == nil {
				t.Errorf("%s: not a JSON-RPC error: %s", tc.name, body)
			}
		}
		if !strings.Contains(msg, `"attacker.example"`) || !strings.Contains(msg, "--allowed-hosts") {
			t.Errorf("%s: the reason does not name the host and the way to allow it: %s", tc.name, body)
		}
	}

	// The WebSocket, with the Origin a rebound page sends.
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	_, resp, err := websocket.DefaultDialer.Dial(ws, http.Header{"Host": {host}, "Origin": {origin}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("WebSocket with a rebound Host: %v %v", err, resp)
	}

	if n := len(e.llm.Requests()); n != 0 {
		t.Errorf("%d requests reached the LLM", n)
	}
	if _, ok := e.store.Engine("pwned"); ok {
		t.Error("the rebound page deployed a chain")
	}
	if _, ok := e.store.Engine("chat"); !ok {
		t.Error("the rebound page deleted a chain")
	}
}

// Cross-site "simple" requests (no preflight: text/plain and form bodies)
// start nothing: with the Origin a browser sends they get 403, and
// without an Origin (an old browser, a stripped header) their body type
// alone gets them 415.
func TestCrossSiteSimplePostsRefused(t *testing.T) {
	e := guardEnv(t, Options{}, StoreOptions{})
	targets := []struct{ name, method, path, body string }{
		{"run", "POST", "/api/v1/chains/chat/run", `{"input":"hi","x":"=1"}`},
		{"agui", "POST", "/api/v1/chains/chat/agui", `{"messages":[{"id":"m","role":"user","content":"hi"}],"x":"=1"}`},
		{"chat completions", "POST", "/v1/chat/completions", `{"model":"chat","messages":[{"role":"user","content":"hi"}],"x":"=1"}`},
		{"deploy chain", "PUT", "/api/v1/chains/pwned", pwnedChain},
	}
	attacks := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		// fetch(url, {method: "POST", mode: "no-cors", body: "..."})
		{"fetch text/plain", map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://attacker.example",
			"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, http.StatusForbidden},
		// <form enctype="text/plain" method="post"> with a JSON-shaped field
		{"form text/plain", map[string]string{"Content-Type": "text/plain", "Origin": "https://attacker.example",
			"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, http.StatusForbidden},
		{"form urlencoded", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://attacker.example",
			"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		// A navigation from a sandboxed frame or a data: URL says Origin: null.
		{"opaque origin", map[string]string{"Content-Type": "text/plain", "Origin": "null"}, http.StatusForbidden},
		// Fetch metadata without an Origin.
		{"cross-site fetch metadata", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		// No Origin at all: the body type decides.
		{"text/plain without Origin", map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"form without Origin", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, http.StatusUnsupportedMediaType},
		// fetch with a Blob body of no type sends no Content-Type.
		{"no Content-Type", map[string]string{}, http.StatusUnsupportedMediaType},
	}
	for _, tg := range targets {
		for _, a := range attacks {
			code, body, _ := e.raw(rawReq{method: tg.method, path: tg.path, body: tg.body, hdr: a.hdr})
			if code != a.want {
				t.Errorf("%s, %s: %d %s, want %d", tg.name, a.name, code, body, a.want)
				continue
			}
			if strings.HasPrefix(tg.path, "/v1/") {
				var oe struct {
					Error struct{ Message, Code string } `json:"error"`
				}
				if json.Unmarshal(body, &oe) != nil || oe.Error.Message == "" || oe.Error.Code == "" {
					t.Errorf("%s, %s: not OpenAI's error shape: %s", tg.name, a.name, body)
				}
			} else if !strings.Contains(string(body), `"error":`) {
				t.Errorf("%s, %s: not the API's error shape: %s", tg.name, a.name, body)
			}
		}
	}
	if n := len(e.llm.Requests()); n != 0 {
		t.Errorf("%d cross-site requests reached the LLM", n)
	}
	if _, ok := e.store.Engine("pwned"); ok {
		t.Error("a cross-site request deployed a chain")
	}
}

// What legitimate callers send still works: the editor (same origin,
// JSON), curl and SDKs (no Origin), a front end admitted with
// --cors-origin, a name admitted with --allowed-hosts, bodiless POSTs,
// and JSON media types with parameters or a +json suffix.
func TestLegitimateCallersPass(t *testing.T) {
	e := guardEnv(t, Options{CORSOrigins: []string{"https://app.example"}, AllowedHosts: []string{"agents.example.com"}}, StoreOptions{})
	self := "http://127.0.0.1:" + e.port()
	run := `{"input":"hi"}`
	cases := []struct {
		name string
		req  rawReq
		want int
	}{
		{"editor, same origin", rawReq{hdr: map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}}, 200},
		{"localhost, same origin", rawReq{host: "localhost:" + e.port(), hdr: map[string]string{"Origin": "http://localhost:" + e.port(), "Content-Type": "application/json"}}, 200},
		{"a .localhost name", rawReq{host: "editor.localhost:" + e.port(), hdr: map[string]string{"Content-Type": "application/json"}}, 200},
		{"IPv6 loopback", rawReq{host: "[::1]:" + e.port(), hdr: map[string]string{"Origin": "http://[::1]:" + e.port(), "Content-Type": "application/json"}}, 200},
		{"curl", rawReq{hdr: map[string]string{"Content-Type": "application/json"}}, 200},
		{"charset parameter", rawReq{hdr: map[string]string{"Content-Type": "application/json; charset=utf-8"}}, 200},
		{"+json suffix", rawReq{hdr: map[string]string{"Content-Type": "application/vnd.example+json"}}, 200},
		{"cors origin", rawReq{hdr: map[string]string{"Origin": "https://app.example", "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}}, 200},
		{"allowed host behind a proxy", rawReq{host: "agents.example.com", hdr: map[string]string{"Origin": "https://agents.example.com",
			"Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}}, 200},
		{"another origin on the allowed host", rawReq{host: "agents.example.com", hdr: map[string]string{"Origin": "https://evil.example.com",
			"Content-Type": "application/json"}}, 403},
		{"same host, another port", rawReq{hdr: map[string]string{"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}}, 403},
	}
	for _, tc := range cases {
		tc.req.method, tc.req.path, tc.req.body = "POST", "/api/v1/chains/chat/run", run
		if code, body, _ := e.raw(tc.req); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	// A POST without a body needs no Content-Type (cancel).
	if code, body, _ := e.raw(rawReq{method: "POST", path: "/api/v1/runs/run-none/cancel"}); code != http.StatusNotFound {
		t.Errorf("cancel without a body: %d %s", code, body)
	}
	// Reads need neither, from any origin: a page cannot read the answer
	// without CORS, and a GET changes nothing.
	if code, body, _ := e.raw(rawReq{method: "GET", path: "/api/v1/chains", hdr: map[string]string{"Origin": "https://attacker.example"}}); code != 200 {
		t.Errorf("GET with a foreign Origin: %d %s", code, body)
	}
	// The WebSocket from the same origin and from the CORS origin.
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	for _, origin := range []string{self, "https://app.example", ""} {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.DefaultDialer.Dial(ws, h)
		if err != nil {
			t.Errorf("WebSocket from %q: %v %v", origin, err, resp)
			continue
		}
		c.Close()
	}
}

// A WebSocket from a foreign origin is refused before the upgrade.
func TestWebSocketForeignOriginRefused(t *testing.T) {
	e := guardEnv(t, Options{}, StoreOptions{})
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	for _, origin := range []string{"https://attacker.example", "null", "http://127.0.0.1:1"} {
		_, resp, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {origin}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("WebSocket from %q: %v %v", origin, err, resp)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "origin") {
			t.Errorf("WebSocket from %q: the refusal gives no reason: %s", origin, b)
		}
	}
}

// With --token, the editor's page loads without it (so it can ask for it)
// while every API route still needs it; the WebSocket takes the token as
// a subprotocol, out of the URL, and answers the ruleagent subprotocol.
func TestTokenEditorPageAndWebSocketSubprotocol(t *testing.T) {
	e := guardEnv(t, Options{Token: "s3cret-token"}, StoreOptions{})
	for _, p := range []string{"/", "/index.html"} {
		if code, body, _ := e.raw(rawReq{method: "GET", path: p}); code != 200 || !strings.Contains(string(body), "<") {
			t.Errorf("GET %s without the token: %d", p, code)
		}
	}
	for _, p := range []string{"/api/v1/chains", "/metrics", "/v1/models", "/api/v1/sessions", "/nope", "/mcp"} {
		if code, _, _ := e.raw(rawReq{method: "GET", path: p}); code != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, code)
		}
	}
	if code, _, _ := e.raw(rawReq{method: "POST", path: "/", body: "{}", hdr: map[string]string{"Content-Type": "application/json"}}); code != http.StatusUnauthorized {
		t.Errorf("POST / without the token: %d, want 401", code)
	}

	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	bearer := func(tok string) string { return "bearer." + base64.RawURLEncoding.EncodeToString([]byte(tok)) }
	d := websocket.Dialer{Subprotocols: []string{"ruleagent", bearer("s3cret-token")}}
	c, resp, err := d.Dial(ws, nil)
	if err != nil {
		t.Fatalf("WebSocket with the token as a subprotocol: %v %v", err, resp)
	}
	if c.Subprotocol() != "ruleagent" {
		t.Errorf("subprotocol %q, want ruleagent", c.Subprotocol())
	}
	if err := c.WriteJSON(map[string]any{"type": "subscribe", "chains": []string{"chat"}}); err != nil {
		t.Fatal(err)
	}
	var m liveMsg
	if err := c.ReadJSON(&m); err != nil || m.Type != "subscribed" {
		t.Errorf("after subscribe: %+v %v", m, err)
	}
	c.Close()
	for _, protos := range [][]string{{"ruleagent", bearer("wrong")}, {"ruleagent"}, {"ruleagent", "bearer.!!"}} {
		d := websocket.Dialer{Subprotocols: protos}
		if _, resp, err := d.Dial(ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("WebSocket with subprotocols %q: %v %v", protos, err, resp)
		}
	}
	// ?token= still works this release (deprecated).
	c, _, err = websocket.DefaultDialer.Dial(ws+"?token=s3cret-token", nil)
	if err != nil {
		t.Errorf("WebSocket with ?token=: %v", err)
	} else {
		c.Close()
	}
}

// With verified identities (--auth) too, the editor's page loads without a
// credential, and a caller's WebSocket presents its key as the
// subprotocol.
func TestIdentityEditorPageAndWebSocketSubprotocol(t *testing.T) {
	e := newIDEnv(t)
	if code, body := e.as("", "GET", "/", nil); code != 200 || !strings.Contains(string(body), "<") {
		t.Errorf("GET / without a credential: %d", code)
	}
	if code, _ := e.as("", "GET", "/api/v1/chains", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/chains without a credential: %d", code)
	}
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	bearer := func(tok string) string { return "bearer." + base64.RawURLEncoding.EncodeToString([]byte(tok)) }
	d := websocket.Dialer{Subprotocols: []string{"ruleagent", bearer(e.alice)}}
	c, resp, err := d.Dial(ws, nil)
	if err != nil {
		t.Fatalf("WebSocket with alice's key as a subprotocol: %v %v", err, resp)
	}
	if c.Subprotocol() != "ruleagent" {
		t.Errorf("subprotocol %q", c.Subprotocol())
	}
	c.Close()
	d = websocket.Dialer{Subprotocols: []string{"ruleagent", bearer("rak_0123456789abcdef_nope")}}
	if _, resp, err := d.Dial(ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket with an unknown key: %v %v", err, resp)
	}
}

// --cors-origin '*' admits every page's origin but the opaque one ("null":
// a sandboxed iframe, a file:// page, a data: URL), which any page can
// take on and so names no one: its POSTs, its preflights and its
// WebSocket are refused and get no CORS headers. Naming it
// (--cors-origin null) admits it.
func TestCORSAnyOriginRefusesTheOpaqueOrigin(t *testing.T) {
	e := guardEnv(t, Options{CORSOrigins: []string{"*"}}, StoreOptions{})
	post := func(origin string) (int, []byte, http.Header) {
		return e.raw(rawReq{method: "POST", path: "/api/v1/chains/chat/run", body: `{"input":"hi"}`,
			hdr: map[string]string{"Origin": origin, "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}})
	}
	if code, body, h := post("https://app.example"); code != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Fatalf("a named origin under *: %d %s %v", code, body, h)
	}
	code, body, h := post("null")
	if code != http.StatusForbidden || !strings.Contains(string(body), "opaque origin") || h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("the null origin under *: %d %s %v", code, body, h)
	}
	code, _, h = e.raw(rawReq{method: "OPTIONS", path: "/api/v1/chains/chat/run",
		hdr: map[string]string{"Origin": "null", "Access-Control-Request-Method": "POST"}})
	if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Allow-Methods") != "" {
		t.Fatalf("a preflight from null under *: %d %v", code, h)
	}
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	if _, resp, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {"null"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a WebSocket from null under *: %v %v", err, resp)
	}

	named := guardEnv(t, Options{CORSOrigins: []string{"null"}}, StoreOptions{})
	code, body, h = named.raw(rawReq{method: "POST", path: "/api/v1/chains/chat/run", body: `{"input":"hi"}`,
		hdr: map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}})
	if code != 200 || h.Get("Access-Control-Allow-Origin") != "null" {
		t.Fatalf("null, named: %d %s %v", code, body, h)
	}
}
