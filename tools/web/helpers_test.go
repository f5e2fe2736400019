package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/netguard"
	"github.com/ruleagent/ruleagent/tools/scrub"
	_ "github.com/ruleagent/ruleagent/tools/web"
)

// harness is one built-in web tool built from its JSON config exactly as
// an agent's tools array builds it, called through the wrapper
// (tools.Set.Invoke) with a scrubber, as the agent and `ruleagent tools
// call` do.
type harness struct {
	t    *testing.T
	set  *tools.Set
	scr  *scrub.Scrubber
	name string
}

func newHarness(t *testing.T, name string, config any) *harness {
	t.Helper()
	h, err := tryHarness(name, config)
	if err != nil {
		t.Fatal(err)
	}
	h.t = t
	t.Cleanup(func() { h.set.Close() })
	return h
}

func tryHarness(name string, config any) (*harness, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return nil, err
	}
	spec, _ := json.Marshal(map[string]any{"type": "builtin", "name": name, "config": json.RawMessage(cfg)})
	specs, err := tools.ParseSpecs([]byte("[" + string(spec) + "]"))
	if err != nil {
		return nil, err
	}
	scr := scrub.New()
	set, err := tools.Build(context.Background(), specs, tools.BuildEnv{Secrets: scr})
	if err != nil {
		return nil, err
	}
	return &harness{set: set, scr: scr, name: name}, nil
}

// call invokes the tool with args (a JSON string or a value to encode).
func (h *harness) call(args any) tools.Outcome {
	h.t.Helper()
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			h.t.Fatal(err)
		}
		raw = string(b)
	}
	m, _ := aspects.NewManager()
	var rec events.Recorder
	run := &tools.Run{Sink: &rec, Scrubber: h.scr, MaxOutput: 200000, Aspects: m, Point: aspects.Point{RunID: "web-test"}}
	out := h.set.Invoke(context.Background(), run, tools.Call{ID: "call_1", Name: h.name, Args: json.RawMessage(raw)})
	if n := len(rec.Events()); n != 4 {
		h.t.Errorf("%d events, want START, ARGS, END, RESULT", n)
	}
	return out
}

// refused asserts that out is a policy refusal under rule whose text
// holds reason, and returns it.
func refused(t *testing.T, what string, out tools.Outcome, rule netguard.Rule, reason string) {
	t.Helper()
	var r *netguard.Refusal
	switch {
	case !out.IsError || out.Kind != "permission_denied" || !errors.Is(out.Err, tools.ErrPolicyDenied):
		t.Errorf("%s: not refused by policy: kind %q: %s", what, out.Kind, out.Content)
	case !errors.As(out.Err, &r):
		t.Errorf("%s: the refusal carries no rule: %v", what, out.Err)
	case r.Rule != rule || !strings.Contains(out.Content, reason):
		t.Errorf("%s: rule %s: %s\n want rule %s and %q", what, r.Rule, out.Content, rule, reason)
	}
}

// site is a local HTTP server that records what reaches it.
type site struct {
	*httptest.Server
	port    string
	hits    atomic.Int32
	mu      sync.Mutex
	headers []http.Header // of every request, in order
	hosts   []string
}

func newSite(t *testing.T, addr string, h http.HandlerFunc) *site {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	s := &site{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.hosts = append(s.hosts, r.Host)
		s.mu.Unlock()
		h(w, r)
	}))
	s.Server.Listener.Close()
	s.Server.Listener = ln
	s.Start()
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	t.Cleanup(s.Close)
	return s
}

func (s *site) requests() ([]http.Header, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...), append([]string(nil), s.hosts...)
}

// local is the config that lets the tool reach test servers on
// 127.0.0.1, and nothing else private.
func local(extra map[string]any) map[string]any {
	c := map[string]any{"allowPrivate": []string{"127.0.0.1/32"}}
	for k, v := range extra {
		c[k] = v
	}
	return c
}
