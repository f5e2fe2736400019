package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/internal/proctest"
)

// The stdio command is also driven by the official TypeScript SDK client,
// against the built binary: server/mcp_peer_test.go, TestMCPOverStdioWithSDK.

// TestMCPStdio: "ruleagent mcp --stdio" answers a client on stdin and
// stdout, reports chains that fail to load on stderr, and ends when stdin
// closes.
func TestMCPStdio(t *testing.T) {
	dir := t.TempDir()
	upper := `{"ruleChain":{"id":"upper","name":"Upper","additionalInfo":{"mcp":true,"description":"Upper-cases text."}},
	 "metadata":{"nodes":[{"id":"js","type":"jsTransform","configuration":{"jsScript":"return {msg: {upper: msg.text.toUpperCase()}, metadata: metadata, msgType: msgType};"}}]}}`
	broken := `{"ruleChain":{"id":"broken"},"metadata":{"nodes":[{"id":"x","type":"no/such"}]}}`
	for name, body := range map[string]string{"upper.json": upper, "broken.json": broken} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, info, clientOut, stderr, code := stdioMCP(t, ctx, "mcp", "--stdio", "--chains", dir)
	if info.ServerInfo.Name != "ruleagent" {
		t.Fatalf("initialize: %+v", info)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "upper"
	req.Params.Arguments = map[string]any{"text": "quiet"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(mcp.TextContent).Text != `{"upper":"QUIET"}` {
		t.Fatalf("call: %+v %v", res, err)
	}

	clientOut.Close() // the client goes away: the server must end by itself
	select {
	case got := <-code:
		if got != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", got, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not end when stdin closed")
	}
	if !strings.Contains(stderr.String(), "broken.json") {
		t.Fatalf("the broken chain was not reported on stderr:\n%s", stderr.String())
	}
}

func TestMCPUsage(t *testing.T) {
	for _, args := range [][]string{{"mcp"}, {"mcp", "--stdio", "extra"}, {"mcp", "--nope"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitUsage || out.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}

// TestKeepStdoutForProtocol: while the protocol owns stdout, stray prints
// go to stderr, and everything is put back afterwards.
func TestKeepStdoutForProtocol(t *testing.T) {
	protocol, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	stray, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = protocol
	defer func() { os.Stdout = saved }()

	restore := keepStdoutForProtocol(protocol, stray)
	fmt.Println("a library printing")
	restore()
	if os.Stdout != protocol {
		t.Fatal("os.Stdout was not restored")
	}
	onStdout, _ := os.ReadFile(protocol.Name())
	onStderr, _ := os.ReadFile(stray.Name())
	if len(onStdout) != 0 || string(onStderr) != "a library printing\n" {
		t.Fatalf("stdout %q, stderr %q", onStdout, onStderr)
	}
}

// With no LLM, the agents served over stdio answer from the demo model,
// and stderr (never stdout) says so.
func TestMCPStdioOnTheDemoModel(t *testing.T) {
	noLLM(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, clientOut, stderr, code := stdioMCP(t, ctx, "mcp", "--stdio", "--chains", repoChain(""))
	req := mcp.CallToolRequest{}
	req.Params.Name = "assistant"
	req.Params.Arguments = map[string]any{"message": "What is a rule chain?"}
	res, err := c.CallTool(ctx, req)
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("call: %+v %v", res, err)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !strings.HasPrefix(text, "[demo model] ") {
		t.Fatalf("answer %q", text)
	}
	clientOut.Close()
	select {
	case got := <-code:
		if got != exitOK {
			t.Fatalf("exit %d, stderr:\n%s", got, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the server did not end when stdin closed")
	}
	if !strings.Contains(stderr.String(), "built-in demo model") {
		t.Fatalf("stderr does not name the demo model:\n%s", stderr.String())
	}
	// It serves MCP: the chain it withholds is named once.
	if n := strings.Count(stderr.String(), `msg="mcp: chain not exposed: other chains bind its parameters, and an MCP client would choose them" chain=order-status bound=[userId]`); n != 1 {
		t.Fatalf("the withheld chain is logged %d times, want once:\n%s", n, stderr.String())
	}
}

// stdioCommand runs the command with args in process on pipes, with an
// mcp-go client over them, started but not initialised. It returns the
// client's transport and client, its output (closing it is the client
// going away), what the command writes to stderr, and its exit code once
// it ends.
func stdioCommand(t *testing.T, ctx context.Context, args ...string) (*transport.Stdio, *client.Client, io.Closer, *proctest.Buffer, chan int) {
	t.Helper()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	stderr := &proctest.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- run(context.Background(), args, serverIn, serverOut, stderr)
		serverOut.Close()
	}()
	tr := transport.NewIO(clientIn, clientOut, io.NopCloser(strings.NewReader("")))
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return tr, c, clientOut, stderr, code
}

// stdioMCP runs `ruleagent args...` (an `mcp --stdio` command line) in
// process on pipes, and returns an mcp-go client started and initialised
// on them (2025-11-25) under ctx, the initialize result, the client's
// output (closing it is the client going away), what the command writes
// to stderr, and its exit code once it ends.
func stdioMCP(t *testing.T, ctx context.Context, args ...string) (*client.Client, *mcp.InitializeResult, io.Closer, *proctest.Buffer, chan int) {
	t.Helper()
	_, c, clientOut, stderr, code := stdioCommand(t, ctx, args...)
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "stdio-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, res, clientOut, stderr, code
}
