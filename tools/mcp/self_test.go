package mcptool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/tools"
)

// demoServer is an mcp-go server with an "add" tool, one that reports a
// failure with isError, and one that fails outright.
func demoServer() *server.MCPServer {
	s := server.NewMCPServer("demo", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds two numbers"),
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprint(req.GetFloat("a", 0) + req.GetFloat("b", 0))), nil
		})
	s.AddTool(mcp.NewTool("refuse", mcp.WithDescription("Always reports an error")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("the answer is no"), nil
		})
	s.AddTool(mcp.NewTool("crash", mcp.WithDescription("Fails in the handler")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("handler exploded")
		})
	return s
}

// countingTransport records HTTP requests, which an in-process server must
// never cause.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, errors.New("no network in this test")
}

// openSockets counts this process's open sockets (Linux only; -1 elsewhere).
func openSockets() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range entries {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

func TestSelfIsInProcess(t *testing.T) {
	rt := &countingTransport{}
	sockets := openSockets()
	set := mustBuild(t, Options{Self: demoServer(), HTTPClient: &http.Client{Transport: rt}}, `[{"type":"mcp","config":{"server":"self"}}]`)
	if got := strings.Join(set.Names(), ","); got != "self__add,self__crash,self__refuse" {
		t.Fatalf("names: %s", got)
	}
	if e := set.Lookup("self__add"); e.Info.Description != "Adds two numbers" || !strings.Contains(string(e.Info.Parameters), `"required":["a","b"]`) {
		t.Errorf("info: %+v", e.Info)
	}
	if got := mustInvoke(t, set, "self__add", `{"a":2,"b":3}`).Content; got != "5" {
		t.Errorf("add: %q", got)
	}
	refused := invoke(set, "self__refuse", `{}`)
	if refused.Err != nil || !refused.IsError || refused.Content != "the answer is no" {
		t.Errorf("isError result: %+v", refused)
	}
	crashed := invoke(set, "self__crash", `{}`)
	if !errors.Is(crashed.Err, tools.ErrExecutionFailed) || !strings.Contains(crashed.Content, "handler exploded") {
		t.Errorf("failing handler: %+v", crashed)
	}
	if rt.n.Load() != 0 {
		t.Errorf("%d HTTP requests were made", rt.n.Load())
	}
	if sockets >= 0 && openSockets() > sockets {
		t.Errorf("sockets before %d, after %d", sockets, openSockets())
	}
}

func TestSelfWithoutServerIsAConfigError(t *testing.T) {
	_, err := build(t, Options{}, `[{"type":"mcp","name":"me","config":{"server":"self"}}]`, nil)
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.server" || !strings.Contains(ce.Msg, "none is available") {
		t.Fatalf("got %v", err)
	}
}

func TestFilterEntryMatchingNothingFailsTheBuild(t *testing.T) {
	_, err := build(t, Options{Self: demoServer()}, `[{"type":"mcp","config":{"server":"self","tools":["add","ad","sub*","mul"]}}]`, nil)
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.tools" || !strings.Contains(ce.Msg, `"ad", "mul": the server has no such tool`) || !strings.Contains(ce.Msg, "it has: add, crash, refuse") {
		t.Fatalf("got %v", err)
	}
	// A glob that matches nothing yet is fine.
	set := mustBuild(t, Options{Self: demoServer()}, `[{"type":"mcp","name":"d","config":{"server":"self","tools":["{add,crash}","sub*"]}}]`)
	if got := strings.Join(set.Names(), ","); got != "d__add,d__crash" {
		t.Errorf("names: %s", got)
	}
}

func TestServerToolNamesAreMappedInjectively(t *testing.T) {
	s := server.NewMCPServer("odd", "1")
	long := strings.Repeat("very_long_tool_name_", 5)
	for _, name := range []string{"files.read", "files/read", "files_read", long, long + "2"} {
		s.AddTool(mcp.NewTool(name), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.Params.Name), nil
		})
	}
	set := mustBuild(t, Options{Self: s}, `[{"type":"mcp","name":"odd","config":{"server":"self"}}]`)
	if set.Len() != 5 {
		t.Fatalf("names: %v", set.Names())
	}
	for _, e := range set.Entries() {
		if !tools.NamePattern.MatchString(e.Info.Name) {
			t.Errorf("%q is not a valid model name", e.Info.Name)
		}
		remote := e.Tool.(*mcpTool).remote
		// Each model name reaches its own server tool.
		if got := mustInvoke(t, set, e.Info.Name, `{}`).Content; got != remote {
			t.Errorf("%s called %q, want %q", e.Info.Name, got, remote)
		}
	}
	if set.Lookup("odd__files_read") == nil {
		t.Errorf("a valid name must be kept as it is: %v", set.Names())
	}
}

func TestToolsAddedLaterAreRefreshed(t *testing.T) {
	s := demoServer()
	set := mustBuild(t, Options{Self: s}, `[{"type":"mcp","name":"live","config":{"server":"self","tools":["add","late*"]}}]`)
	addLate(s)
	waitFor(t, func() bool { return set.Lookup("live__late") != nil })
	if got := mustInvoke(t, set, "live__late", `{}`).Content; got != "I was added later" {
		t.Errorf("late: %q", got)
	}
	s.DeleteTools("late")
	waitFor(t, func() bool { return set.Lookup("live__late") == nil })
	if got := strings.Join(set.Names(), ","); got != "live__add" {
		t.Errorf("after delete: %s", got)
	}
}

func TestToolsAddedLaterOverStreamableHTTP(t *testing.T) {
	s := demoServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s))
	ts := httptest.NewServer(mux) // listens on 127.0.0.1
	// Registered before the set's cleanup, so it runs after it: the
	// server's Close waits for the client's open GET stream.
	t.Cleanup(ts.Close)
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"remote","config":{"server":"`+ts.URL+`/mcp"}}]`)
	if got := mustInvoke(t, set, "remote__add", `{"a":1,"b":2}`).Content; got != "3" {
		t.Errorf("add: %q", got)
	}
	addLate(s)
	waitFor(t, func() bool { return set.Lookup("remote__late") != nil })
	if got := mustInvoke(t, set, "remote__late", `{}`).Content; got != "I was added later" {
		t.Errorf("late: %q", got)
	}
}

func addLate(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("late", mcp.WithDescription("Added after start")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("I was added later"), nil
		})
}
