package mcptool

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/peers"
	"github.com/ruleagent/ruleagent/tools"
)

// peers are the npm MCP servers the tests run against (internal/peers
// locates them; without node or the packages the tests skip, under CI
// they fail).
type peerBins struct {
	bin string // test/peers/node_modules/.bin
}

func needPeers(t *testing.T) peerBins {
	t.Helper()
	peers.Bin(t, "mcp-server-filesystem")
	return peerBins{bin: filepath.Dir(peers.Bin(t, "mcp-server-everything"))}
}

func freePort(t *testing.T) int { return peers.FreePort(t) }

// httpPeer is server-everything serving HTTP on a loopback port.
type httpPeer struct{ *peers.HTTPServer }

func startHTTPPeer(t *testing.T, _ peerBins, mode string) httpPeer {
	return httpPeer{peers.StartEverything(t, mode)}
}

func (h httpPeer) addr() string { return h.Addr() }
func (h httpPeer) start()       { h.Start() }
func (h httpPeer) kill()        { h.Kill() }

// secretLog records what a build registers as secrets.
type secretLog struct {
	mu     sync.Mutex
	values []string
}

func (s *secretLog) AddSecrets(v ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = append(s.values, v...)
}

func (s *secretLog) has(v string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.values {
		if x == v {
			return true
		}
	}
	return false
}

// build builds a tools array with the mcp provider; the set is closed at
// cleanup.
func build(t *testing.T, o Options, toolsJSON string, secrets tools.SecretRegistrar) (*tools.Set, error) {
	t.Helper()
	specs, err := tools.ParseSpecs(json.RawMessage(toolsJSON))
	if err != nil {
		t.Fatalf("specs: %v", err)
	}
	set, err := tools.Build(context.Background(), specs, tools.BuildEnv{
		Providers: map[string]tools.Provider{tools.TypeMCP: NewProvider(o)},
		Secrets:   secrets,
		WorkDir:   t.TempDir(),
	})
	if err == nil {
		t.Cleanup(func() { set.Close() })
	}
	return set, err
}

func mustBuild(t *testing.T, o Options, toolsJSON string) *tools.Set {
	t.Helper()
	set, err := build(t, o, toolsJSON, nil)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return set
}

// invoke calls a tool through the wrapper, as the agent does.
func invoke(set *tools.Set, name, args string) tools.Outcome {
	return set.Invoke(context.Background(), &tools.Run{Sink: events.Discard}, tools.Call{ID: "call", Name: name, Args: json.RawMessage(args)})
}

func mustInvoke(t *testing.T, set *tools.Set, name, args string) tools.Outcome {
	t.Helper()
	o := invoke(set, name, args)
	if o.Err != nil || o.IsError {
		t.Fatalf("%s(%s): %s", name, args, o.Content)
	}
	return o
}

// connOf is the shared client behind a tool of the set.
func connOf(t *testing.T, set *tools.Set, name string) *conn {
	t.Helper()
	e := set.Lookup(name)
	if e == nil {
		t.Fatalf("no tool %s in %v", name, set.Names())
	}
	return e.Tool.(*mcpTool).conn
}

// liveSession is the conn's current session, or nil.
func (c *conn) liveSession() *session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
