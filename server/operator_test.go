package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// addKey stores a new API key for user with role, and returns it.
func addKey(t *testing.T, keys sessions.KeyStore, user, role string) string {
	t.Helper()
	key, rec, err := identity.IssueKey(identity.KeySpec{User: user, Role: role}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.PutKey(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	return key
}

// With verified identity, the server's administration is the operator's:
// a user's key gets 403 saying so on every operator route (deploying and
// deleting chains, discovering an MCP server, API keys, MCP's
// save_rule_chain); an operator-role key and the --token may.
func TestOperatorRoutesRefuseUsers(t *testing.T) {
	e := newIDEnv(t)
	ops := addKey(t, e.keys, "ops", identity.RoleOperator)
	dsl := jsDSL("", "Greeter", nil, "return {msg: 'hi', metadata: metadata, msgType: msgType};")
	discover := map[string]any{"type": "mcp", "name": "me", "config": map[string]any{"server": "self", "tools": []string{"list_rule_chains"}}}
	routes := []struct {
		method, path string
		body         any
		ok           int
	}{
		{"PUT", "/api/v1/chains/greeter", dsl, 200},
		{"DELETE", "/api/v1/chains/greeter", nil, 204},
		{"POST", "/api/v1/tools/mcp/discover", discover, 200},
		{"GET", "/api/v1/keys", nil, 200},
		{"POST", "/api/v1/keys", map[string]any{"user": "carol"}, 201},
	}
	for _, who := range []struct{ name, key string }{{"alice", e.alice}, {"ops", ops}, {"operator", opToken}} {
		for _, r := range routes {
			code, body := e.as(who.key, r.method, r.path, r.body)
			want := r.ok
			if who.name == "alice" {
				want = http.StatusForbidden
			}
			if code != want {
				t.Fatalf("%s: %s %s: %d %s", who.name, r.method, r.path, code, body)
			}
			if who.name == "alice" && !strings.Contains(string(body), "needs the operator's --token or a credential granted the operator role") {
				t.Fatalf("alice: %s %s: the refusal does not say why: %s", r.method, r.path, body)
			}
		}
	}
	// Alice's refused PUT deployed nothing, her refused DELETE removed
	// nothing.
	if code, _ := e.as(opToken, "PUT", "/api/v1/chains/greeter", dsl); code != 200 {
		t.Fatal("redeploy")
	}
	if code, _ := e.as(e.alice, "DELETE", "/api/v1/chains/greeter", nil); code != 403 {
		t.Fatal("alice deletes")
	}
	if _, ok := e.store.Engine("greeter"); !ok {
		t.Fatal("alice's refused DELETE undeployed the chain")
	}

	// MCP: save_rule_chain is refused to a user as a tool error, and
	// deploys for an operator.
	save := func(bearer, id string) *mcp.CallToolResult {
		c := mcpAs(t, e.base, bearer)
		defer c.Close()
		return callTool(t, c, "save_rule_chain", map[string]any{"id": id, "dsl": dsl}, nil)
	}
	if res := save(e.alice, "by-alice"); !res.IsError || !strings.Contains(text(res), "deploying a chain (save_rule_chain) needs the operator's --token") {
		t.Fatalf("alice's save_rule_chain: %+v", res)
	}
	if _, ok := e.store.Engine("by-alice"); ok {
		t.Fatal("alice deployed a chain over MCP")
	}
	if res := save(ops, "by-ops"); res.IsError {
		t.Fatalf("ops' save_rule_chain: %s", text(res))
	}
	if _, ok := e.store.Engine("by-ops"); !ok {
		t.Fatal("the operator-role key's save_rule_chain deployed nothing")
	}

	// A user still runs chains and lists its own runs; an operator-role
	// key lists everyone's, sessions and usage too.
	if code, data := e.whoami(e.alice, nil); code != 200 || data != `{"user":"alice"}` {
		t.Fatalf("alice runs: %d %s", code, data)
	}
	if code, body := e.as(e.alice, "POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "run-alice"}); code != 200 {
		t.Fatalf("alice's paused run: %d %s", code, body)
	}
	for who, key := range map[string]string{"ops": ops, "alice": e.alice, "bob": e.bob} {
		code, list := e.as(key, "GET", "/api/v1/runs", nil)
		if code != 200 || strings.Contains(string(list), "run-alice") != (who != "bob") {
			t.Fatalf("%s lists: %d %s", who, code, list)
		}
	}
	if code, body := e.as(ops, "POST", "/api/v1/runs/run-alice/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("ops cancels alice's run: %d %s", code, body)
	}
}

// mcpAs is an initialised MCP client of base's /mcp sending bearer.
func mcpAs(t *testing.T, base, bearer string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bearer}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// An agent acts for the caller who ran it: a user's agent calling
// save_rule_chain through the in-process self server is refused as the
// user would be; the operator's deploys.
func TestAgentOfAUserCannotDeployThroughSelf(t *testing.T) {
	script := llmtest.Route(llmtest.Rule{Match: llmtest.SystemContains("You are builder."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply("result: " + res[0].Content)
		}
		dsl := jsDSL("built-"+r.LastUserText(), "Built", nil, "return {msg: 'built', metadata: metadata, msgType: msgType};")
		args, _ := json.Marshal(map[string]string{"dsl": dsl})
		return llmtest.Calls(llmtest.Call("self__save_rule_chain", string(args)))
	})})
	llm := llmtest.NewServer(t, script)
	dir := t.TempDir()
	builder := agentDSL("builder", "Builder", nil, map[string]any{"systemPrompt": "You are builder.",
		"tools": []any{map[string]any{"type": "mcp", "name": "self", "config": map[string]any{"server": "self", "tools": []string{"save_rule_chain"}}}}})
	if err := os.WriteFile(filepath.Join(dir, "builder.json"), []byte(builder), 0o644); err != nil {
		t.Fatal(err)
	}
	store, errs := OpenStore(dir, NewConfig(map[string]string{"llm_url": llm.URL, "model": "m"}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	base := serveLoopback(t, Handler(Options{Store: store, Token: opToken, Identity: v, Keys: keys}))
	alice := addKey(t, keys, "alice", "")
	run := func(bearer, input string) string {
		e := &apiEnv{t: t, base: base}
		code, body, _ := e.do("POST", "/api/v1/chains/builder/run", map[string]any{"input": input}, "Authorization", "Bearer "+bearer)
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil {
			t.Fatalf("run: %d %s", code, body)
		}
		return ans.Data
	}
	if got := run(alice, "alice"); !strings.Contains(got, "needs the operator's --token") || !strings.Contains(got, `"alice" is a user`) {
		t.Fatalf("alice's agent: %s", got)
	}
	if _, ok := store.Engine("built-alice"); ok {
		t.Fatal("alice's agent deployed a chain through self")
	}
	if got := run(opToken, "op"); !strings.Contains(got, `Chain \"built-op\" deployed`) && !strings.Contains(got, `Chain "built-op" deployed`) {
		t.Fatalf("the operator's agent: %s", got)
	}
	if _, ok := store.Engine("built-op"); !ok {
		t.Fatal("the operator's agent deployed nothing")
	}
}

// The live trace (GET /api/v1/ws) shows an operator every run of the
// chains it watches, and a verified user only its own.
func TestLiveTraceShowsAUserItsOwnRuns(t *testing.T) {
	e := newIDEnv(t)
	ops := addKey(t, e.keys, "ops", identity.RoleOperator)
	ws := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws"
	watch := func(key string) *websocket.Conn {
		d := websocket.Dialer{Subprotocols: []string{"ruleagent", "bearer." + base64.RawURLEncoding.EncodeToString([]byte(key))}}
		c, resp, err := d.Dial(ws, nil)
		if err != nil {
			t.Fatalf("dial: %v %v", err, resp)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.WriteJSON(map[string]any{"type": "subscribe", "chains": []string{"whoami"}}); err != nil {
			t.Fatal(err)
		}
		readLive(t, c, func(m liveMsg) bool { return m.Type == "subscribed" })
		return c
	}
	alice, op := watch(e.alice), watch(ops)
	for _, r := range []struct{ key, run string }{{e.bob, "run-bob"}, {e.alice, "run-alice"}} {
		if code, body := e.as(r.key, "POST", "/api/v1/chains/whoami/run", map[string]any{"input": map[string]any{}, "runId": r.run}); code != 200 {
			t.Fatalf("%s: %d %s", r.run, code, body)
		}
	}
	// Bob's run came first: alice's stream reaches her own run without
	// a frame of his; the operator's shows both.
	for _, m := range readLive(t, alice, func(m liveMsg) bool { return m.RunID == "run-alice" }) {
		if m.RunID == "run-bob" {
			t.Fatalf("alice watched bob's run: %+v", m)
		}
	}
	readLive(t, op, func(m liveMsg) bool { return m.RunID == "run-bob" })
	readLive(t, op, func(m liveMsg) bool { return m.RunID == "run-alice" })
}
