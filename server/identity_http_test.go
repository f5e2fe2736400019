package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/sessions"
)

// idEnv is the API server verifying callers by per-user API keys, with
// the operator's token beside them and a chain that answers with the user
// id its run carries.
type idEnv struct {
	*apiEnv
	keys       *sessions.Memory
	alice, bob string
}

const opToken = "operator-token"

func newIDEnv(t *testing.T) *idEnv {
	t.Helper()
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	e := &idEnv{apiEnv: newAPIEnv(t, Options{Token: opToken, Identity: v, Keys: keys}), keys: keys}
	for _, u := range []struct {
		name string
		key  *string
	}{{"alice", &e.alice}, {"bob", &e.bob}} {
		key, rec, err := identity.NewKey(u.name, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.PutKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		*u.key = key
	}
	whoami := jsDSL("whoami", "Who am I", map[string]any{"mcp": true, "description": "Says who runs it."},
		"return {msg: {user: metadata.userId || ''}, metadata: metadata, msgType: msgType};")
	if code, body, _ := e.do("PUT", "/api/v1/chains/whoami", whoami); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	return e
}

// as sends a request with key as the bearer ("" for none).
func (e *idEnv) as(key, method, path string, body any) (int, []byte) {
	e.t.Helper()
	code, b, _ := e.do(method, path, body, "Authorization", "Bearer "+key)
	return code, b
}

func (e *idEnv) whoami(key string, metadata map[string]any) (int, string) {
	e.t.Helper()
	code, body := e.as(key, "POST", "/api/v1/chains/whoami/run", map[string]any{"input": map[string]any{}, "metadata": metadata})
	var ans runAnswer
	if code != 200 {
		return code, string(body)
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		e.t.Fatal(err)
	}
	return code, ans.Data
}

// With verified identity, the user id comes from the credentials: a body
// naming another user is refused with 403 on every route (run, AG-UI,
// OpenAI), one naming the caller or none runs as the caller, MCP runs carry
// the caller, and the operator's token still names any user.
func TestVerifiedIdentityOnEveryRoute(t *testing.T) {
	e := newIDEnv(t)
	if code, body := e.as("", "GET", "/api/v1/runs", nil); code != 401 || !strings.Contains(string(body), "no credentials") {
		t.Fatalf("no credentials: %d %s", code, body)
	}
	if code, body := e.as("rak_0123456789abcdef_nope", "GET", "/api/v1/runs", nil); code != 401 || !strings.Contains(string(body), "unknown or revoked") {
		t.Fatalf("unknown key: %d %s", code, body)
	}
	if code, body := e.as("sk-wrong", "POST", "/v1/chat/completions", map[string]any{"model": "chat"}); code != 401 || !strings.Contains(string(body), `"code":"invalid_api_key"`) {
		t.Fatalf("OpenAI, wrong key: %d %s", code, body)
	}

	// The run route: metadata.userId.
	for _, md := range []map[string]any{nil, {"userId": "alice"}} {
		if code, data := e.whoami(e.alice, md); code != 200 || data != `{"user":"alice"}` {
			t.Fatalf("run as alice, metadata %v: %d %s", md, code, data)
		}
	}
	if code, body := e.whoami(e.alice, map[string]any{"userId": "bob"}); code != 403 || !strings.Contains(body, `\"metadata.userId\" is \"bob\", but the caller is \"alice\"`) {
		t.Fatalf("run claiming bob: %d %s", code, body)
	}
	// The operator is trusted with every user, as a back end acting for
	// its users is.
	if code, data := e.whoami(opToken, map[string]any{"userId": "carol"}); code != 200 || data != `{"user":"carol"}` {
		t.Fatalf("operator naming carol: %d %s", code, data)
	}

	// AG-UI: forwardedProps.ruleagent.userId.
	agui := func(claim string) (int, []byte) {
		return e.as(e.alice, "POST", "/api/v1/chains/chat/agui", map[string]any{"threadId": "t-id", "messages": userMsg("hi"),
			"forwardedProps": map[string]any{"ruleagent": map[string]any{"userId": claim}}})
	}
	if code, body := agui("bob"); code != 403 || !strings.Contains(string(body), "forwardedProps.ruleagent.userId") {
		t.Fatalf("AG-UI claiming bob: %d %s", code, body)
	}
	if code, body := agui("alice"); code != 200 || !strings.Contains(string(body), "RUN_FINISHED") {
		t.Fatalf("AG-UI as alice: %d %s", code, body)
	}

	// OpenAI: user, and metadata.userId.
	chat := func(extra map[string]any) (int, []byte) {
		body := map[string]any{"model": "chat", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
		for k, v := range extra {
			body[k] = v
		}
		return e.as(e.alice, "POST", "/v1/chat/completions", body)
	}
	for _, extra := range []map[string]any{{"user": "bob"}, {"metadata": map[string]string{"userId": "bob"}}, {"user": "alice", "metadata": map[string]string{"userId": "bob"}}} {
		if code, body := chat(extra); code != 403 || !strings.Contains(string(body), `"code":"user_mismatch"`) {
			t.Fatalf("OpenAI %v: %d %s", extra, code, body)
		}
	}
	if code, body := chat(map[string]any{"user": "alice"}); code != 200 || !strings.Contains(string(body), "Hello! You said: hi") {
		t.Fatalf("OpenAI as alice: %d %s", code, body)
	}

	// MCP: no field names a user; the run carries the verified caller.
	if got := mcpWhoami(t, e.base, e.alice); got != `{"user":"alice"}` {
		t.Fatalf("MCP as alice: %s", got)
	}
	if got := mcpWhoami(t, e.base, opToken); got != `{"user":""}` {
		t.Fatalf("MCP as the operator: %s", got)
	}
}

// mcpWhoami calls the whoami tool over /mcp with bearer.
func mcpWhoami(t *testing.T, base, bearer string) string {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + bearer}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "whoami", map[string]any{}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %+v", err, res)
	}
	return text(res)
}

// A run belongs to the caller who started it: another caller does not see
// it listed (nor its interrupt ids), cannot cancel it, and cannot answer
// its interrupts on any route; the operator sees and may do everything.
func TestRunsBelongToTheirCaller(t *testing.T) {
	e := newIDEnv(t)
	code, body := e.as(e.alice, "POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-alice", "runId": "run-alice"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	id := ans.Interrupts[0].ID
	for who, key := range map[string]string{"alice": e.alice, "operator": opToken, "bob": e.bob} {
		code, list := e.as(key, "GET", "/api/v1/runs", nil)
		listed := strings.Contains(string(list), id) && strings.Contains(string(list), `"user":"alice"`)
		if code != 200 || listed != (who != "bob") || (who == "bob" && strings.Contains(string(list), "run-alice")) {
			t.Fatalf("%s's list: %d %s", who, code, list)
		}
	}
	answer := []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
	// Another caller's interrupts and runs are as unknown as ones that
	// never were (TestAnotherUsersIDsAreUnknown).
	if code, body := e.as(e.bob, "POST", "/api/v1/runs/run-alice/resume", map[string]any{"resume": answer}); code != 409 || !strings.Contains(string(body), "is not open") {
		t.Fatalf("bob answers on the run route: %d %s", code, body)
	}
	if code, body := e.as(e.bob, "POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-alice", "runId": "r-bob", "resume": answer}); code != 409 || !strings.Contains(string(body), "answer no open interrupt") {
		t.Fatalf("bob answers over AG-UI: %d %s", code, body)
	}
	if code, body := e.as(e.bob, "POST", "/api/v1/runs/run-alice/cancel", nil); code != 404 {
		t.Fatalf("bob cancels: %d %s", code, body)
	}
	// Bob's own input on a thread of the same name is his thread, not
	// blocked by alice's open interrupt.
	if code, body := e.as(e.bob, "POST", "/api/v1/chains/chat/agui", map[string]any{"threadId": "t-alice", "messages": userMsg("hi")}); code != 200 {
		t.Fatalf("bob's own thread t-alice: %d %s", code, body)
	}
	code, body = e.as(e.alice, "POST", "/api/v1/runs/run-alice/resume", map[string]any{"resume": answer})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" {
		t.Fatalf("alice answers: %d %s", code, body)
	}
}

// The operator manages API keys over /api/v1/keys; a user cannot mint
// one; a revoked key is refused at once.
func TestKeysAPI(t *testing.T) {
	e := newIDEnv(t)
	if code, body := e.as(e.alice, "POST", "/api/v1/keys", map[string]any{"user": "mallory"}); code != http.StatusForbidden {
		t.Fatalf("alice mints a key: %d %s", code, body)
	}
	code, body := e.as(opToken, "POST", "/api/v1/keys", map[string]any{"user": "carol", "name": "ci"})
	var made struct{ ID, User, Name, Key string }
	if code != http.StatusCreated || json.Unmarshal(body, &made) != nil || made.User != "carol" || !strings.HasPrefix(made.Key, identity.KeyPrefix) {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, data := e.whoami(made.Key, nil); code != 200 || data != `{"user":"carol"}` {
		t.Fatalf("carol's key: %d %s", code, data)
	}
	code, body = e.as(opToken, "GET", "/api/v1/keys", nil)
	if code != 200 || !strings.Contains(string(body), `"user":"carol"`) || strings.Contains(string(body), made.Key[len(identity.KeyPrefix)+17:]) || strings.Contains(string(body), "hash") {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, body := e.as(opToken, "DELETE", "/api/v1/keys/"+made.ID, nil); code != 200 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	if code, _ := e.whoami(made.Key, nil); code != 401 {
		t.Fatalf("a revoked key: %d", code)
	}
	if code, _ := e.as(opToken, "DELETE", "/api/v1/keys/"+made.ID, nil); code != 404 {
		t.Fatalf("revoking twice: %d", code)
	}
}

// Sessions belong to their caller too: a verified caller lists, reads,
// exports, switches and deletes only the sessions of its own user id.
func TestSessionsBelongToTheirCaller(t *testing.T) {
	st := sessions.NewMemory()
	e := newSessionEnv(t, st, map[string]string{"memo": memoChain("memo", map[string]any{"scope": "user"})})
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: st})
	if err != nil {
		t.Fatal(err)
	}
	e.opts = Options{Store: e.store, Token: opToken, Identity: v, Keys: st}
	e.base = serveLoopback(t, Handler(e.opts))
	keys := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		key, rec, err := identity.NewKey(u, "", time.Now())
		if err != nil || st.PutKey(t.Context(), rec) != nil {
			t.Fatal(err)
		}
		keys[u] = key
		if code, _, _ := e.do("POST", "/api/v1/chains/memo/run", map[string]any{"input": "hi"}, "Authorization", "Bearer "+key); code != 200 {
			t.Fatalf("%s's run: %d", u, code)
		}
	}
	as := func(who, method, path string) (int, string) {
		code, b, _ := e.do(method, path, nil, "Authorization", "Bearer "+keys[who])
		return code, string(b)
	}
	if code, list := as("alice", "GET", "/api/v1/sessions"); code != 200 || !strings.Contains(list, "memo:user:alice") || strings.Contains(list, "bob") {
		t.Fatalf("alice's list: %d %s", code, list)
	}
	if code, _ := as("alice", "GET", "/api/v1/sessions?user=bob"); code != 403 {
		t.Fatalf("alice listing bob's: %d", code)
	}
	for _, req := range [][2]string{{"GET", "/api/v1/sessions/memo:user:bob"}, {"GET", "/api/v1/sessions/memo:user:bob/export"}, {"DELETE", "/api/v1/sessions/memo:user:bob"}} {
		if code, body := as("alice", req[0], req[1]); code != 404 || !strings.Contains(body, "no session") {
			t.Fatalf("alice: %s %s: %d %s", req[0], req[1], code, body)
		}
	}
	if code, body, _ := e.do("PUT", "/api/v1/sessions/memo:user:bob/model", map[string]any{"model": "default"}, "Authorization", "Bearer "+keys["alice"]); code != 404 {
		t.Fatalf("alice switching bob's model: %d %s", code, body)
	}
	if code, body := as("alice", "GET", "/api/v1/sessions/memo:user:alice"); code != 200 || !strings.Contains(body, "Noted: hi") {
		t.Fatalf("alice reading hers: %d %s", code, body)
	}
	if code, list, _ := e.do("GET", "/api/v1/sessions", nil); code != 200 || !strings.Contains(string(list), "memo:user:bob") || !strings.Contains(string(list), "memo:user:alice") {
		t.Fatalf("the operator's list: %d %s", code, list)
	}
}
