package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruleagent/ruleagent/internal/peers"
)

// runSDK2Client runs test/peers/mcp2-client.mjs (@modelcontextprotocol/client
// 2.x, pinned to 2026-07-28) with args, and returns its report by step.
func runSDK2Client(t *testing.T, args ...string) sdkReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"test/peers/mcp2-client.mjs"}, args...)...)
	cmd.Dir = repoRoot
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	report := sdkReport{}
	lines := bufio.NewScanner(&stdout)
	lines.Buffer(make([]byte, 0, 1<<16), 8<<20)
	for lines.Scan() {
		var head struct {
			Step string `json:"step"`
		}
		if json.Unmarshal(lines.Bytes(), &head) != nil {
			t.Errorf("the script printed %q", lines.Text())
			continue
		}
		report[head.Step] = append(json.RawMessage(nil), lines.Bytes()...)
	}
	if err != nil || report["done"] == nil {
		t.Fatalf("the 2.x client failed (%v): %s\nstderr:\n%s", err, report["error"], stderr.String())
	}
	return report
}

// checkSDK2Report judges a run of the 2.x client against the test chains.
func checkSDK2Report(t *testing.T, r sdkReport, asks bool) {
	t.Helper()
	var version string
	var server struct {
		Name string `json:"name"`
	}
	r.field(t, "init", "version", &version)
	r.field(t, "init", "server", &server)
	if version != modern || server.Name != "ruleagent" {
		t.Errorf("init: version %q, server %+v", version, server)
	}
	var tools []struct {
		Name string `json:"name"`
	}
	r.field(t, "tools", "tools", &tools)
	if !slices.ContainsFunc(tools, func(x struct {
		Name string `json:"name"`
	}) bool {
		return x.Name == "helper"
	}) {
		t.Errorf("tools %+v", tools)
	}
	if res := r.result(t, "helper", "result"); res.IsError || res.text() != "helper answer" {
		t.Errorf("helper: %+v", res)
	}
	var notes []struct {
		Progress float64 `json:"progress"`
		Message  string  `json:"message"`
	}
	r.field(t, "progress", "notes", &notes)
	var messages []string
	for _, n := range notes {
		messages = append(messages, n.Message)
	}
	for _, want := range []string{"started", "calling read", "read returned"} {
		if !slices.Contains(messages, want) {
			t.Errorf("no progress %q in %q", want, messages)
		}
	}
	if res := r.result(t, "progress", "result"); res.IsError || res.text() != readerAnswer {
		t.Errorf("reader: %+v", res)
	}
	if asks {
		var asked []struct {
			Message string `json:"message"`
		}
		r.field(t, "greet", "asked", &asked)
		if res := r.result(t, "greet", "result"); res.IsError || res.text() != "Hello, Ada!" || len(asked) != 1 || asked[0].Message != "What is your name?" {
			t.Errorf("greet: %+v, asked %+v", res, asked)
		}
	}
	var honored map[string]any
	var listChanged int
	var after []string
	r.field(t, "listen", "honored", &honored)
	r.field(t, "listen", "listChanged", &listChanged)
	r.field(t, "listen", "tools", &after)
	if honored["toolsListChanged"] != true || listChanged == 0 || !slices.Contains(after, "poet") {
		t.Errorf("listen: honored %v, list_changed %d, tools %v", honored, listChanged, after)
	}
	if res := r.result(t, "listen", "poem"); res.IsError || res.text() != "helper answer" {
		t.Errorf("the saved agent: %+v", res)
	}
}

// TestMCPOverHTTPWithSDK2: the official client of the 2026-07-28 line
// drives /mcp statelessly: tools, an agent call, progress on the call's own
// stream, a chain that asks for input (input_required answered by its
// elicitation handler), and tools/list_changed on a subscriptions/listen
// stream.
func TestMCPOverHTTPWithSDK2(t *testing.T) {
	needPeers(t)
	peers.Need(t, filepath.Join(repoRoot, "test/peers/node_modules/@modelcontextprotocol/client/package.json"))
	e := newMCPEnvWith(t, map[string][]byte{"greet.json": []byte(greetDSL("greet"))})
	url := serveLoopback(t, Handler(Options{Store: e.store})) + "/mcp"
	checkSDK2Report(t, runSDK2Client(t, "http", url, "--ask"), true)
}
