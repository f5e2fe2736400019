package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

// jsChain is a chain whose one node sets msg.data to text.
func jsChain(id, text string) string {
	return `{"ruleChain":{"id":"` + id + `","name":"` + id + `","root":true},"metadata":{"firstNodeIndex":0,"connections":[],"nodes":[` +
		`{"id":"s1","type":"jsTransform","name":"set","configuration":{"jsScript":"return {'msg': '` + text + `', 'metadata': metadata, 'msgType': msgType};"}}]}}`
}

// A --read-only replica of a fleet deploys its folder's chains and
// follows the folder's edits (a deploy by git pull on each machine),
// rather than the fleet's chain store, which it could never change:
// its banner says so.
func TestServeReadOnlyReplicaFollowsItsFolder(t *testing.T) {
	rs := redistest.Start(t)
	setLLM(t, llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok"))).URL)
	dir := t.TempDir()
	file := filepath.Join(dir, "echo.json")
	if err := os.WriteFile(file, []byte(jsChain("echo", "v1")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr, out, logs, exit := serve(t, ctx, "--chains", dir, "--session-store", rs.URL, "--read-only")
	if !strings.Contains(out.String(), "chains from the folder (--read-only)") {
		t.Errorf("banner:\n%s", out)
	}
	if err := os.WriteFile(file, []byte(jsChain("echo", "v2")), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/api/v1/chains/echo")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "v2") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the folder's edit was not deployed: %s\n%s", b, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if code := <-exit; code != 0 {
		t.Errorf("exit %d: %s", code, logs)
	}
}
