package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/server"
)

func TestValidateCommand(t *testing.T) {
	var out, errb bytes.Buffer
	files, _ := filepath.Glob(repoChain("*.json"))
	if code := run(context.Background(), append([]string{"validate"}, files...), nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "ok:") {
		t.Fatalf("examples: exit %d\n%s%s", code, out.String(), errb.String())
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"ruleChain":{"id":"bad"},"metadata":{"nodes":[{"id":"agent","type":"ai/agent","configuration":{"url":"http://x/v1","model":"m",
	 "tools":[{"type":"agent","targetId":"support-agent"},{"type":"agent","targetId":"ghost"},{"type":"builtin","name":"nope"}]}}]}}`), 0o644)
	out.Reset()
	code := run(context.Background(), []string{"validate", "--chains", repoChain(""), bad}, nil, &out, &errb)
	if code != exitFailure || !strings.Contains(out.String(), `warning: `+bad+`: metadata.nodes[0].configuration.tools[1].targetId: no chain "ghost"`) ||
		!strings.Contains(out.String(), `error: `+bad+`: metadata.nodes[0].configuration.tools[2].name: unknown builtin "nope"`) ||
		strings.Contains(out.String(), "support-agent\"") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	out.Reset()
	run(context.Background(), []string{"validate", "--json", bad}, nil, &out, &errb)
	var ps struct{ Errors, Warnings []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &ps); err != nil || len(ps.Errors) != 1 || len(ps.Warnings) != 2 || ps.Errors[0]["path"] == "" {
		t.Fatalf("%v %s", err, out.String())
	}

	// Warnings alone do not fail: RuleGo loads such a chain (its node
	// without an id is named node0).
	warn := filepath.Join(dir, "warn.json")
	_ = os.WriteFile(warn, []byte(`{"ruleChain":{"id":"warn"},"metadata":{"nodes":[{"type":"log","configuration":{"jsScript":"return 'x';"}}],"connections":[]}}`), 0o644)
	out.Reset()
	if code := run(context.Background(), []string{"validate", warn}, nil, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), `warning: `+warn+`: metadata.nodes[0].id: missing: RuleGo names the node "node0"`) || !strings.Contains(out.String(), "ok: 1 chain file, 1 warning") {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
}

// endpointChain is a chain with one endpoint of type typ on addr.
func endpointChain(id, typ, addr string) string {
	b, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": id, "name": id, "root": true},
		"metadata": map[string]any{
			"endpoints": []any{map[string]any{"id": "in", "type": typ, "configuration": map[string]any{"server": addr},
				"routers": []any{map[string]any{"id": "r1", "params": []any{"POST"}, "from": map[string]any{"path": "/hook"}}}}},
			"nodes": []any{map[string]any{"id": "t", "type": "jsTransform", "configuration": map[string]any{
				"jsScript": "return {msg: msg, metadata: metadata, msgType: msgType};"}}},
		},
	})
	return string(b)
}

// TestValidateAppliesTheEndpointPolicy: validate takes serve's
// --endpoint-types and --endpoint-bind and refuses what serve would: an
// endpoint type not allowed, a listening endpoint off loopback; with the
// flags that allow them, the same chains are ok. Serve's store, given the
// same policy, agrees on every case.
func TestValidateAppliesTheEndpointPolicy(t *testing.T) {
	write := func(name, dsl string) string {
		// Each chain in a folder of its own, for serve's store to load.
		p := filepath.Join(t.TempDir(), name+".json")
		if err := os.WriteFile(p, []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mqtt := write("broker", endpointChain("broker", "mqtt", "127.0.0.1:1883"))
	wide := write("wide", endpointChain("wide", "http", ":9090"))
	local := write("local", endpointChain("local", "http", "127.0.0.1:0"))
	for _, c := range []struct {
		file  string
		flags []string
		want  string // "" for ok
		// noServe: once allowed, serve would start the endpoint (bind every
		// interface, connect to a broker), so it is not asked.
		noServe bool
	}{
		{mqtt, nil, `metadata.endpoints[0].type: endpoint type "mqtt" is not allowed by the server's endpoint policy`, false},
		{mqtt, []string{"--endpoint-types", "http,mqtt"}, "", true},
		{wide, nil, `metadata.endpoints[0].configuration.server: ":9090" listens on every interface`, false},
		{wide, []string{"--endpoint-bind", "*"}, "", true},
		{local, nil, "", false},
		{local, []string{"--endpoint-types", "schedule"}, `endpoint type "http" is not allowed`, false},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(append([]string{"validate"}, c.flags...), c.file), nil, &out, &errb)
		if c.want == "" && (code != 0 || !strings.Contains(out.String(), "ok: 1 chain file")) ||
			c.want != "" && (code != exitFailure || !strings.Contains(out.String(), "error: "+c.file+": ") || !strings.Contains(out.String(), c.want)) {
			t.Errorf("validate %v %s: exit %d\n%s%s", c.flags, filepath.Base(c.file), code, out.String(), errb.String())
		}
		if c.noServe {
			continue
		}
		// Serve's store with the same policy refuses it alike.
		var pol server.EndpointPolicy
		for i := 0; i+1 < len(c.flags); i += 2 {
			l := (*listFlag)(&pol.Types)
			if c.flags[i] == "--endpoint-bind" {
				l = (*listFlag)(&pol.Bind)
			}
			_ = l.Set(c.flags[i+1])
		}
		store, errs := server.OpenStoreWith(filepath.Dir(c.file), server.NewConfig(nil), server.StoreOptions{EndpointPolicy: pol})
		store.Close()
		if refused := strings.Contains(fmt.Sprint(errs), "endpoint policy"); refused != (c.want != "") || refused && !strings.Contains(fmt.Sprint(errs), c.want) {
			t.Errorf("serve %v %s: %v", c.flags, filepath.Base(c.file), errs)
		}
	}
}

// TestValidateSkipsNodeModulesAndGit: a folder's chains are its own, not
// the JSON files of node_modules or .git (which serve does not load
// either).
func TestValidateSkipsNodeModulesAndGit(t *testing.T) {
	dir := t.TempDir()
	for name, dsl := range map[string]string{
		"chains/ok.json":                       `{"ruleChain":{"id":"ok"},"metadata":{"nodes":[{"id":"n","type":"jsTransform","configuration":{"jsScript":"return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}`,
		"chains/node_modules/pkg/package.json": `{"name": "pkg", "version": "1.0.0"}`,
		"chains/sub/node_modules/x.json":       `{"not": "a chain"}`,
		"chains/.git/config.json":              `{"not": "a chain"}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"validate", filepath.Join(dir, "chains")}, nil, &out, &errb); code != 0 || !strings.Contains(out.String(), "ok: 1 chain file, 0 warnings") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}
