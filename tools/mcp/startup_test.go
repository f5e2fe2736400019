package mcptool

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/ruleagent/ruleagent/tools"
)

// serveLater serves demoServer over streamable HTTP on addr once it is
// called, for a server that comes up after the agent started.
func serveLater(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("listen %s: %v", addr, err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(demoServer()))
	ts := httptest.NewUnstartedServer(mux)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	// Cut the client's open GET stream first, or Close would wait for it.
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
}

func TestUnreachableServerStartsWithoutToolsAndConnectsLater(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	start := time.Now()
	set := mustBuild(t, Options{}, `[{"type":"mcp","name":"late","config":{"server":"http://`+addr+`/mcp","connectTimeout":"2s"}}]`)
	if len(set.Names()) != 0 || time.Since(start) > 3*time.Second {
		t.Fatalf("tools %v after %s", set.Names(), time.Since(start))
	}
	serveLater(t, addr)
	// The first retry is a second after the failure.
	waitFor(t, func() bool { return set.Lookup("late__add") != nil })
	if got := mustInvoke(t, set, "late__add", `{"a":2,"b":3}`).Content; got != "5" {
		t.Errorf("add: %q", got)
	}
}

func TestServerConnectingWhileTheSetIsStillBeingBuilt(t *testing.T) {
	// The first entry's server comes up at 200 ms and is reached by the
	// retry at 1 s, while the second entry still waits for its silent
	// server (connectTimeout 1.5 s): the tools are handed over once the
	// set is built.
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	go func() {
		time.Sleep(200 * time.Millisecond)
		serveLater(t, addr)
	}()
	set := mustBuild(t, Options{}, `[
		{"type":"mcp","name":"late","config":{"server":"http://`+addr+`/mcp"}},
		{"type":"mcp","name":"mute","config":{"server":"stdio:sleep 30","connectTimeout":"1500ms"}}]`)
	waitFor(t, func() bool { return set.Lookup("late__add") != nil })
	if got := mustInvoke(t, set, "late__add", `{"a":1,"b":1}`).Content; got != "2" {
		t.Errorf("add: %q", got)
	}
}

func TestRequiredServerFailsTheBuild(t *testing.T) {
	start := time.Now()
	_, err := build(t, Options{}, fmt.Sprintf(`[{"type":"mcp","name":"gone","config":{"server":"http://127.0.0.1:%d/mcp","connectTimeout":"2s","required":true}}]`, freePort(t)), nil)
	var ce *tools.ConfigError
	if !errors.As(err, &ce) || ce.Path != "tools[0].config.server" || time.Since(start) > 3*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
}

func TestClosingStopsTheBackgroundConnector(t *testing.T) {
	set := mustBuild(t, Options{}, fmt.Sprintf(`[{"type":"mcp","name":"gone","config":{"server":"http://127.0.0.1:%d/mcp"}}]`, freePort(t)))
	done := make(chan struct{})
	go func() { set.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for the background connector")
	}
}

func TestMissingProgramFailsEvenWhenNotRequired(t *testing.T) {
	for _, cfg := range []string{
		`{"command":"/nonexistent/mcp-server"}`,
		`{"command":"no-such-mcp-server-on-path"}`,
		`{"server":"stdio:` + filepath.Join(t.TempDir(), "nope") + `"}`,
	} {
		_, err := build(t, Options{}, `[{"type":"mcp","name":"x","config":`+cfg+`}]`, nil)
		var ce *tools.ConfigError
		if !errors.As(err, &ce) || ce.Path != "tools[0].config.server" || !strings.Contains(ce.Msg, "cannot connect") {
			t.Errorf("%s: got %v", cfg, err)
		}
	}
}
