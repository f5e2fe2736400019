package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// keysCmd runs `ruleagent keys ...` in the test.
func keysCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"keys"}, args...), nil, &out, &errb)
	return code, strings.TrimSpace(out.String()), errb.String()
}

// whoamiChains writes a chains folder with a chain that answers with the
// user id its run carries.
func whoamiChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	dsl, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "whoami", "name": "Who am I"},
		"metadata": map[string]any{"firstNodeIndex": 0, "connections": []any{}, "nodes": []any{map[string]any{
			"id": "js", "type": "jsTransform", "name": "JS", "configuration": map[string]any{
				"jsScript": "return {msg: {user: metadata.userId || ''}, metadata: metadata, msgType: msgType};"}}}},
	})
	if err := os.WriteFile(filepath.Join(dir, "whoami.json"), dsl, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// whoami runs the whoami chain with bearer and returns the status and the
// user the run carried.
func whoami(t *testing.T, addr, bearer string, metadata map[string]any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"input": map[string]any{}, "metadata": metadata})
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/chains/whoami/run", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var ans struct{ Data string }
	_ = json.Unmarshal(body, &ans)
	if resp.StatusCode != 200 {
		return resp.StatusCode, string(body)
	}
	return resp.StatusCode, ans.Data
}

// Per-user API keys through the CLI: created on the store (only the hash
// kept), used over HTTP by `serve --auth keys`, created, listed and
// revoked through the running server with the operator's token, and
// revoked on the store once the server is gone.
func TestKeysCommandAndServeAuthKeys(t *testing.T) {
	data := t.TempDir()
	code, alice, stderr := keysCmd(t, "create", "--user", "alice", "--name", "laptop", "--data", data)
	if code != 0 || !strings.HasPrefix(alice, "rak_") || !strings.Contains(stderr, "shown once") {
		t.Fatalf("create: %d %q %s", code, alice, stderr)
	}
	code, list, _ := keysCmd(t, "list", "--data", data)
	if code != 0 || !strings.Contains(list, "alice") || !strings.Contains(list, "laptop") || strings.Contains(list, alice) {
		t.Fatalf("list: %d %s", code, list)
	}
	db, _ := os.ReadFile(filepath.Join(data, "sessions.db"))
	if bytes.Contains(db, []byte(alice[len("rak_")+17:])) {
		t.Fatal("the key's secret is in the store")
	}
	if code, _, stderr := keysCmd(t, "create", "--data", data); code != exitUsage || !strings.Contains(stderr, "--user") {
		t.Fatalf("create without --user: %d %s", code, stderr)
	}

	ctx, stop := context.WithCancel(context.Background())
	addr, out, logs, exit := serve(t, ctx, "--auth", "keys", "--token", "op-secret", "--chains", whoamiChains(t), "--data", data)
	if !strings.Contains(out.String(), "identity: verified by API keys") {
		t.Fatalf("banner: %s", out)
	}
	// healthz tells a front end (the editor) that the server decides the
	// user, so that it names none of its own.
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		var health map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if health["verifiedIdentity"] != true {
			t.Fatalf("healthz: %v", health)
		}
	}
	if code, user := whoami(t, addr, alice, nil); code != 200 || user != `{"user":"alice"}` {
		t.Fatalf("alice's key: %d %s", code, user)
	}
	if code, body := whoami(t, addr, alice, map[string]any{"userId": "bob"}); code != 403 {
		t.Fatalf("alice claiming bob: %d %s", code, body)
	}
	if code, _ := whoami(t, addr, "", nil); code != 401 {
		t.Fatalf("no key: %d", code)
	}
	srv := []string{"--server", addr, "--token", "op-secret"}
	code, bob, stderr := keysCmd(t, append([]string{"create", "--user", "bob"}, srv...)...)
	if code != 0 || !strings.HasPrefix(bob, "rak_") {
		t.Fatalf("create through the server: %d %q %s", code, bob, stderr)
	}
	if code, user := whoami(t, addr, bob, nil); code != 200 || user != `{"user":"bob"}` {
		t.Fatalf("bob's key: %d %s", code, user)
	}
	if code, _, stderr := keysCmd(t, "create", "--user", "mallory", "--server", addr, "--token", bob); code == 0 || !strings.Contains(stderr, "operator") {
		t.Fatalf("bob minting a key: %d %s", code, stderr)
	}
	code, list, _ = keysCmd(t, append([]string{"list", "--json"}, srv...)...)
	var keys []struct{ ID, User string }
	if code != 0 || json.Unmarshal([]byte(list), &keys) != nil || len(keys) != 2 || keys[0].User != "alice" || keys[1].User != "bob" {
		t.Fatalf("list through the server: %d %s", code, list)
	}
	if code, _, stderr := keysCmd(t, "list", "--data", data); code == 0 || !strings.Contains(stderr, "--server") {
		t.Fatalf("the store while the server holds it: %d %s", code, stderr)
	}
	if code, msg, stderr := keysCmd(t, append([]string{"revoke", keys[0].ID}, srv...)...); code != 0 || !strings.Contains(msg, "revoked") {
		t.Fatalf("revoke through the server: %d %s %s", code, msg, stderr)
	}
	if code, _ := whoami(t, addr, alice, nil); code != 401 {
		t.Fatalf("alice's revoked key: %d", code)
	}
	stop()
	if c := <-exit; c != 0 {
		t.Fatalf("serve exited %d: %s", c, logs)
	}
	if code, _, stderr := keysCmd(t, "revoke", keys[1].ID, "--data", data); code != 0 {
		t.Fatalf("revoke on the store: %d %s", code, stderr)
	}
	if code, _, stderr := keysCmd(t, "revoke", keys[1].ID, "--data", data); code == 0 || !strings.Contains(stderr, "no such API key") {
		t.Fatalf("revoke twice: %d %s", code, stderr)
	}
}

// A key may grant the operator role and expire: `keys create --role
// operator --expires 30d` makes one that manages keys through the server
// like --token; `keys list` shows each key's role, expiry and last use; a
// key past its expiry is refused with 401 saying so.
func TestKeysRoleExpiryAndLastUse(t *testing.T) {
	data := t.TempDir()
	code, ops, stderr := keysCmd(t, "create", "--user", "ops", "--role", "operator", "--expires", "30d", "--data", data)
	if code != 0 || !strings.Contains(stderr, "role operator, expires ") {
		t.Fatalf("create an operator key: %d %q %s", code, ops, stderr)
	}
	_, brief, stderr := keysCmd(t, "create", "--user", "temp", "--expires", "1s", "--data", data)
	if !strings.HasPrefix(brief, "rak_") {
		t.Fatalf("create a brief key: %s", stderr)
	}
	for _, bad := range [][]string{{"--role", "admin"}, {"--expires", "soon"}, {"--expires", "2001-01-01"}} {
		if code, _, stderr := keysCmd(t, append([]string{"create", "--user", "x", "--data", data}, bad...)...); code == 0 {
			t.Fatalf("create %v: accepted: %s", bad, stderr)
		}
	}
	code, list, _ := keysCmd(t, "list", "--data", data)
	if code != 0 || !strings.Contains(list, "ROLE") || !strings.Contains(list, "EXPIRES") || !strings.Contains(list, "LAST USED") ||
		!strings.Contains(list, "operator") || !strings.Contains(list, "never") {
		t.Fatalf("list: %d %s", code, list)
	}

	ctx, stop := context.WithCancel(context.Background())
	addr, _, logs, exit := serve(t, ctx, "--auth", "keys", "--chains", whoamiChains(t), "--data", data)
	if code, user := whoami(t, addr, ops, nil); code != 200 || user != `{"user":"ops"}` {
		t.Fatalf("ops' key: %d %s", code, user)
	}
	// The operator-role key manages keys through the server.
	code, list, stderr = keysCmd(t, "list", "--json", "--server", addr, "--token", ops)
	var keys []struct {
		User, Role        string
		Expires, LastUsed string
	}
	if code != 0 || json.Unmarshal([]byte(list), &keys) != nil || len(keys) != 2 {
		t.Fatalf("list through the server with the operator key: %d %s %s", code, list, stderr)
	}
	for _, k := range keys {
		if k.User == "ops" && (k.Role != "operator" || k.Expires == "" || k.LastUsed == "") {
			t.Fatalf("ops' key: %+v", k)
		}
		if k.User == "temp" && k.LastUsed != "" {
			t.Fatalf("temp's key was never used: %+v", k)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	if code, body := whoami(t, addr, brief, nil); code != 401 || !strings.Contains(body, "expired at") {
		t.Fatalf("an expired key: %d %s", code, body)
	}
	stop()
	if c := <-exit; c != 0 {
		t.Fatalf("serve exited %d: %s", c, logs)
	}
}
