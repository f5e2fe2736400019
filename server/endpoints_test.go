package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// tickNode counts the messages it gets, for the schedule endpoint tests.
type tickNode struct{}

var ticks atomic.Int64

func (*tickNode) New() types.Node                                { return &tickNode{} }
func (*tickNode) Type() string                                   { return "test/tick" }
func (*tickNode) Init(types.Config, types.Configuration) error   { return nil }
func (*tickNode) Destroy()                                       {}
func (*tickNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) { ticks.Add(1); ctx.TellSuccess(msg) }

func init() { _ = rulego.Registry.Register(&tickNode{}) }

// httpChain is a chain with an embedded HTTP endpoint on addr whose route
// answers with the chain's output: reply is the value it sets.
func httpChain(id, addr, path, reply string) string {
	b, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": id, "name": id, "root": true},
		"metadata": map[string]any{
			"endpoints": []any{map[string]any{"id": "api", "type": "http", "configuration": map[string]any{"server": addr},
				"routers": []any{map[string]any{"id": "r1", "params": []any{"POST"}, "from": map[string]any{"path": path},
					"to": map[string]any{"wait": true, "processors": []any{"responseToBody"}}}}}},
			"nodes": []any{map[string]any{"id": "t", "type": "jsTransform", "configuration": map[string]any{
				"jsScript": "return {msg: {reply: '" + reply + "'}, metadata: metadata, msgType: msgType};"}}},
		},
	})
	return string(b)
}

func post(addr, path string) (int, string) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post("http://"+addr+path, "application/json", strings.NewReader(`{"x":1}`))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEmbeddedEndpoints(t *testing.T) {
	e := newAPIEnv(t, Options{})
	addr := freeLoopback(t)

	// Started on deploy, on loopback, and listed by the chains API.
	if code, body, _ := e.do("PUT", "/api/v1/chains/hook", httpChain("hook", addr, "/hook", "v1")); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	if code, body := post(addr, "/hook"); code != 200 || !strings.Contains(body, "v1") {
		t.Fatalf("endpoint: %d %s", code, body)
	}
	_, list, _ := e.do("GET", "/api/v1/chains", nil)
	if !strings.Contains(string(list), `"endpoints":[{"id":"api","type":"http","address":"`+addr+`","routes":["/hook"]}]`) {
		t.Fatalf("the chains API does not list the endpoint: %s", list)
	}

	// Refused off loopback (the running version stays), unless allowed.
	code, body, _ := e.do("PUT", "/api/v1/chains/hook", httpChain("hook", ":"+strings.Split(addr, ":")[1], "/hook", "v2"))
	if code != 400 || !strings.Contains(string(body), `"path":"metadata.endpoints[0].configuration.server"`) || !strings.Contains(string(body), "every interface") {
		t.Fatalf("an open address: %d %s", code, body)
	}
	if code, body := post(addr, "/hook"); code != 200 || !strings.Contains(body, "v1") {
		t.Fatalf("after a refused deploy: %d %s", code, body)
	}
	for _, typ := range []string{"mqtt", "endpoint/net_client"} {
		dsl := strings.Replace(httpChain("hook", addr, "/hook", "v2"), `"type":"http"`, `"type":"`+typ+`"`, 1)
		if code, body, _ := e.do("PUT", "/api/v1/chains/hook", dsl); code != 400 || !strings.Contains(string(body), "not allowed by the server's endpoint policy") {
			t.Fatalf("type %s: %d %s", typ, code, body)
		}
	}

	// Replaced: the new route answers, the old one is gone.
	if code, body, _ := e.do("PUT", "/api/v1/chains/hook", httpChain("hook", addr, "/hook2", "v2")); code != 200 {
		t.Fatalf("replace: %d %s", code, body)
	}
	if code, body := post(addr, "/hook2"); code != 200 || !strings.Contains(body, "v2") {
		t.Fatalf("new route: %d %s", code, body)
	}
	if code, _ := post(addr, "/hook"); code == 200 {
		t.Fatal("the replaced route still answers")
	}

	// A port conflict: a clear deploy error, the running version intact.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, body, _ = e.do("PUT", "/api/v1/chains/hook", httpChain("hook", taken.Addr().String(), "/hook3", "v3"))
	if code != 400 || !strings.Contains(string(body), `endpoint \"api\" (http) did not start`) || !strings.Contains(string(body), "address already in use") {
		t.Fatalf("a port conflict: %d %s", code, body)
	}
	if code, body := post(addr, "/hook2"); code != 200 || !strings.Contains(body, "v2") {
		t.Fatalf("after a port conflict: %d %s", code, body)
	}

	// Deleted: stopped.
	if code, _, _ := e.do("DELETE", "/api/v1/chains/hook", nil); code != 204 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := post(addr, "/hook2"); code != 0 {
		t.Fatalf("the deleted chain's endpoint still answers (%d)", code)
	}
}

func TestEmbeddedEndpointPolicyAllowsMore(t *testing.T) {
	dir := t.TempDir()
	port := strings.Split(freeLoopback(t), ":")[1]
	_ = os.WriteFile(filepath.Join(dir, "open.json"), []byte(httpChain("open", "127.0.0.2:"+port, "/x", "ok")), 0o644)
	s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{EndpointPolicy: EndpointPolicy{Bind: []string{"127.0.0.2"}}})
	defer s.Close()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if code, body := post("127.0.0.2:"+port, "/x"); code != 200 || !strings.Contains(body, "ok") {
		t.Fatalf("%d %s", code, body)
	}
}

// A schedule endpoint fires while its chain is deployed and stops with it.
func TestScheduleEndpoint(t *testing.T) {
	e := newAPIEnv(t, Options{})
	dsl := `{"ruleChain":{"id":"cron","root":true},"metadata":{"endpoints":[{"id":"tick","type":"schedule",
	  "routers":[{"from":{"path":"*/1 * * * * *"}}]}],"nodes":[{"id":"n","type":"test/tick"}]}}`
	before := ticks.Load()
	if code, body, _ := e.do("PUT", "/api/v1/chains/cron", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ticks.Load() == before {
		if time.Now().After(deadline) {
			t.Fatal("the schedule never fired")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, _, _ := e.do("DELETE", "/api/v1/chains/cron", nil); code != 204 {
		t.Fatal("delete")
	}
	time.Sleep(200 * time.Millisecond)
	after := ticks.Load()
	time.Sleep(2200 * time.Millisecond)
	if n := ticks.Load() - after; n != 0 {
		t.Fatalf("the deleted chain's schedule fired %d more times", n)
	}
}

// Chains without node ids load on every path (PUT, the folder, the
// watcher), with a warning: RuleGo names the nodes node0, node1, ...
func TestChainWithoutNodeIDs(t *testing.T) {
	e := newAPIEnv(t, Options{})
	if err := e.store.Watch(); err != nil {
		t.Fatal(err)
	}
	dsl := func(id string) string {
		return fmt.Sprintf(`{"ruleChain":{"id":%q},"metadata":{"nodes":[{"type":"jsTransform","configuration":{"jsScript":"return {msg: {ok: true}, metadata: metadata, msgType: msgType};"}}]}}`, id)
	}
	code, body, _ := e.do("PUT", "/api/v1/chains/noids", dsl("noids"))
	if code != 200 || !strings.Contains(string(body), `"path":"metadata.nodes[0].id","message":"missing: RuleGo names the node \"node0\"","warning":true`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if code, body, _ = e.do("POST", "/api/v1/chains/noids/run", map[string]any{"input": map[string]any{}}); code != 200 || !strings.Contains(string(body), `\"ok\":true`) {
		t.Fatalf("run: %d %s", code, body)
	}
	_ = os.WriteFile(filepath.Join(e.dir, "byhand.json"), []byte(dsl("byhand")), 0o644)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := e.store.Engine("byhand"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher did not load a chain without node ids: %v", e.store.Broken())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
