package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/state/chainsync"
	"github.com/ruleagent/ruleagent/state/redisconn"
)

// fleetReplica is a Store on a fleet's chain store, served over HTTP.
type fleetReplica struct {
	t     *testing.T
	store *Store
	base  string
}

// newFleetReplica opens a store on the chain store cs with a sandbox
// floor, syncs its chains until the test ends, and serves it.
func newFleetReplica(t *testing.T, cs chainsync.Store, name string, floor components.SandboxFloor, ep EndpointPolicy) *fleetReplica {
	t.Helper()
	cfg := WithGovernance(NewConfig(map[string]string{"llm_url": "http://127.0.0.1:1/v1", "model": "test-model", "workspace": t.TempDir()}),
		Governance{Sandbox: floor})
	st, errs := OpenStoreWith("", cfg, StoreOptions{Chains: cs, Replica: name, EndpointPolicy: ep})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { st.SyncChains(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		st.Close()
	})
	return &fleetReplica{t: t, store: st, base: serveLoopback(t, Handler(Options{Store: st}))}
}

func (r *fleetReplica) do(method, path, body string) (int, []byte) {
	r.t.Helper()
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// chains returns GET /api/v1/chains by id.
func (r *fleetReplica) chains() map[string]ChainInfo {
	r.t.Helper()
	code, b := r.do("GET", "/api/v1/chains", "")
	var list []ChainInfo
	if err := json.Unmarshal(b, &list); err != nil || code != 200 {
		r.t.Fatalf("chains: %d %s", code, b)
	}
	out := map[string]ChainInfo{}
	for _, c := range list {
		out[c.ID] = c
	}
	return out
}

// within waits up to d for cond.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two replicas on one chain store: a chain saved on one runs on the
// other within a second, a deletion too; a chain the other's sandbox
// floor refuses is reported there (log, chains API, the chains check)
// while the writer runs it; a save refused at deploy leaves the store as
// it was; a chain the store lost (a Redis restarted empty) is put back by
// the replicas that run it.
func TestFleetChainsReachEveryReplica(t *testing.T) {
	rs := redistest.Start(t)
	conn, err := redisconn.Open(t.Context(), rs.URL, redisconn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cs := chainsync.NewRedis(conn.Client, conn.Prefix)
	a := newFleetReplica(t, cs, "a", components.SandboxFloor{Mode: "best-effort", AllowLower: true}, EndpointPolicy{})
	// b starts no http endpoint: one port on one machine is a's.
	b := newFleetReplica(t, cs, "b", components.SandboxFloor{Mode: "best-effort"}, EndpointPolicy{Types: []string{"schedule"}})
	within(t, 5*time.Second, "caught up", func() bool {
		return a.store.fleet.sync.CaughtUp() && b.store.fleet.sync.CaughtUp()
	})

	hello := govAgent("hello", "You are hello.", nil)
	code, body := a.do("PUT", "/api/v1/chains/hello", hello)
	var info ChainInfo
	if err := json.Unmarshal(body, &info); err != nil || code != 200 || info.Fleet == nil || info.Fleet.Version != 1 || info.Fleet.Applied != 1 {
		t.Fatalf("PUT on a: %d %s", code, body)
	}
	within(t, time.Second, "hello deployed on b", func() bool { _, ok := b.store.Engine("hello"); return ok })
	if got := b.chains()["hello"]; !got.Deployed || got.Fleet == nil || got.Fleet.Applied != 1 || got.Fleet.Hash != chainsync.Hash([]byte(hello)) {
		t.Errorf("b lists hello as %+v", got)
	}

	// Saved by an agent (save_rule_chain's path) on b: runs on a too.
	if _, err := b.store.SaveFrom(t.Context(), "byagent", []byte(govAgent("byagent", "You were saved by an agent.", nil))); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "byagent deployed on a", func() bool { _, ok := a.store.Engine("byagent"); return ok })

	// b's floor refuses a chain that a's allows: a runs it, b reports it.
	escape := govAgent("escape", "You are escape.", map[string]any{"tools": []any{bashOff}})
	if code, body := a.do("PUT", "/api/v1/chains/escape", escape); code != 200 {
		t.Fatalf("PUT escape on a: %d %s", code, body)
	}
	within(t, time.Second, "escape reported on b", func() bool { return b.chains()["escape"].Fleet != nil })
	got := b.chains()["escape"]
	if got.Deployed || got.Fleet.Version != 1 || got.Fleet.Applied != 0 || !strings.Contains(got.Error, "below the operator's sandbox floor") {
		t.Errorf("b lists escape as %+v", got)
	}
	if _, ok := b.store.Engine("escape"); ok {
		t.Error("b runs a chain below its floor")
	}
	_, probe := b.store.ChainProbes()
	if c := probe.Check(t.Context()); c.OK || !strings.Contains(c.Detail, "escape (store version 1, running 0)") {
		t.Errorf("b's chains check: %+v", c)
	}
	if _, probe := a.store.ChainProbes(); !probe.Check(t.Context()).OK {
		t.Errorf("a's chains check: %+v", probe.Check(t.Context()))
	}
	// Saved on b, it is refused by b's validation: the store keeps a's.
	if code, body := b.do("PUT", "/api/v1/chains/escape", strings.Replace(escape, "You are escape.", "You are escape 2.", 1)); code != 400 {
		t.Errorf("PUT escape on b: %d %s", code, body)
	}
	if c, _ := cs.Get(t.Context(), "escape"); c.Version != 1 {
		t.Errorf("escape's store version after b's refusal: %d", c.Version)
	}

	// Deleted on b: gone from a within a second.
	if code, body := b.do("DELETE", "/api/v1/chains/hello", ""); code != 204 {
		t.Fatalf("DELETE on b: %d %s", code, body)
	}
	within(t, time.Second, "hello removed from a", func() bool { _, ok := a.store.Engine("hello"); return !ok })
	if code, _ := a.do("DELETE", "/api/v1/chains/hello", ""); code != 404 {
		t.Errorf("DELETE of a deleted chain: %d", code)
	}

	// Refused at deploy on the writer (its endpoint's port is taken): 400,
	// and the store is set back to the version before.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	if code, body := a.do("PUT", "/api/v1/chains/hook", httpChain("hook", freeAddr, "/hook", "v1")); code != 200 {
		t.Fatalf("PUT hook: %d %s", code, body)
	}
	code, body = a.do("PUT", "/api/v1/chains/hook", httpChain("hook", taken.Addr().String(), "/hook", "v2"))
	if code != 400 || !strings.Contains(string(body), "address already in use") {
		t.Fatalf("PUT hook on a taken port: %d %s", code, body)
	}
	c, err := cs.Get(t.Context(), "hook")
	if err != nil || c.Hash != chainsync.Hash([]byte(httpChain("hook", freeAddr, "/hook", "v1"))) {
		t.Errorf("the store after a refused deploy: %+v %v", c, err)
	}

	// The store loses everything (a Redis restarted without persistence):
	// the replicas put back what they run.
	rs.Restart(t)
	within(t, 10*time.Second, "escape and hook put back", func() bool {
		_, e1 := cs.Get(t.Context(), "escape")
		_, e2 := cs.Get(t.Context(), "hook")
		return e1 == nil && e2 == nil
	})
	if _, err := cs.Get(t.Context(), "hello"); !errors.Is(err, chainsync.ErrNotFound) {
		t.Errorf("a deleted chain came back: %v", err)
	}
	within(t, 5*time.Second, "a's chains check ok again", func() bool {
		_, probe := a.store.ChainProbes()
		return probe.Check(t.Context()).OK
	})
}
