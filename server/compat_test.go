package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
)

// ruleGoTestdata is RuleGo v0.37.0's own test chains, in the module cache.
func ruleGoTestdata(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "rulego", "rulego@v0.37.0", "testdata", "rule")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("RuleGo's test data is not in the module cache (go mod download): %v", err)
	}
	return dir
}

// needsTestOnly are the files of RuleGo's test data that need what only
// RuleGo's own tests register.
var needsTestOnly = map[string]string{
	"test_context.json":           "needs the test-only node types test/upper and test/time of RuleGo's tests",
	"test_context_chain.json":     "needs the test-only node types test/upper and test/time of RuleGo's tests",
	"with_schedule_endpoint.json": "needs the test-only endpoint processor testPrint of RuleGo's tests",
}

// volatile matches what differs between two runs of one message: ids and
// timestamps.
var volatile = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b1[0-9]{12}\b`)

// end is one end of a run, normalised for comparison.
type end struct {
	Relation string
	Data     string
	Metadata map[string]string
}

func normalise(rel, data string, md map[string]string) end {
	m := map[string]string{}
	for k, v := range md {
		if k != "runId" && k != "threadId" && k != agent.MetaThreadGenerated {
			m[k] = volatile.ReplaceAllString(v, "#")
		}
	}
	return end{Relation: rel, Data: volatile.ReplaceAllString(canonicalJoin(data), "#"), Metadata: m}
}

// canonicalJoin sorts the results a join node merges (objects carrying a
// nodeId, in arrival order: the order of parallel branches is not part of
// either engine's behaviour), also inside JSON held in strings.
func canonicalJoin(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, _ := json.Marshal(sortJoined(v))
	return string(b)
}

func sortJoined(v any) any {
	switch x := v.(type) {
	case string:
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
			return canonicalJoin(x)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = sortJoined(e)
		}
	case []any:
		for i, e := range x {
			x[i] = sortJoined(e)
		}
		slices.SortStableFunc(x, func(a, b any) int {
			am, _ := a.(map[string]any)
			bm, _ := b.(map[string]any)
			an, _ := am["nodeId"].(string)
			bn, _ := bm["nodeId"].(string)
			return strings.Compare(an, bn)
		})
	}
	return v
}

func sortEnds(ends []end) []end {
	slices.SortFunc(ends, func(a, b end) int {
		return strings.Compare(a.Relation+a.Data+fmt.Sprint(a.Metadata), b.Relation+b.Data+fmt.Sprint(b.Metadata))
	})
	return ends
}

// TestRuleGoTestdataDifferential: every chain of RuleGo's own test data
// that RuleGo loads, ruleagent loads too (and the other way round); a
// message sent through ruleagent's run route ends exactly as it ends in
// plain RuleGo (every end's relation, data and metadata); and a chain's
// embedded HTTP endpoint answers as it does in plain RuleGo.
func TestRuleGoTestdataDifferential(t *testing.T) {
	dir := ruleGoTestdata(t)
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) < 20 {
		t.Fatalf("only %d test chains", len(files))
	}
	// Two chains call a REST service on a private address; both engines
	// call the same local stand-in instead.
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("no such thing"))
	}))
	defer rest.Close()
	compared := 0
	for _, f := range files {
		name := filepath.Base(f)
		if why, ok := needsTestOnly[name]; ok {
			t.Logf("skipped %s: %s", name, why)
			continue
		}
		t.Run(name, func(t *testing.T) {
			raw, _ := os.ReadFile(f)
			dsl := strings.ReplaceAll(string(raw), "http://192.168.136.26:9099", rest.URL)
			id, _ := ChainID([]byte(dsl))
			if id == "" {
				id = strings.TrimSuffix(name, ".json")
			}
			plainAddr, oursAddr := freeLoopback(t), freeLoopback(t)

			pool := rulego.NewRuleGo()
			defer pool.Stop()
			plain, perr := pool.New(id, []byte(strings.ReplaceAll(dsl, `":9090"`, `"`+plainAddr+`"`)),
				rulego.WithConfig(rulego.NewConfig(types.WithLogger(quietLogger{}))))

			folder := t.TempDir()
			_ = os.WriteFile(filepath.Join(folder, name), []byte(strings.ReplaceAll(dsl, `":9090"`, `"`+oursAddr+`"`)), 0o644)
			store, errs := OpenStoreWith(folder, NewConfig(nil), StoreOptions{EndpointPolicy: EndpointPolicy{Types: []string{"*"}}})
			defer store.Close()
			if (perr == nil) != (len(errs) == 0) {
				t.Fatalf("RuleGo: %v; ruleagent: %v", perr, errs)
			}
			if perr != nil {
				return
			}
			base := serveLoopback(t, Handler(Options{Store: store}))
			// RuleGo itself sometimes reports a branch's end after
			// OnMsgAndWait returns (a flow node calling a missing chain), in
			// plain RuleGo and in ruleagent alike: a difference must show
			// in each of three tries to count.
			var want, got []end
			for try := 0; try < 3; try++ {
				want, got = plainEnds(t, plain), oursEnds(t, base, id)
				if slices.EqualFunc(want, got, func(a, b end) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
					break
				}
				if try == 2 {
					t.Fatalf("ends differ\nRuleGo:    %v\nruleagent: %v", want, got)
				}
			}
			if hasEndpoints([]byte(dsl)) {
				p, o := postEndpoint(t, plainAddr), postEndpoint(t, oursAddr)
				if p != o {
					t.Fatalf("endpoint answers differ\nRuleGo:    %s\nruleagent: %s", p, o)
				}
			}
			compared++
		})
	}
	if compared < 18 {
		t.Fatalf("only %d chains compared", compared)
	}
}

const diffInput = `{"temperature":41}`

func plainEnds(t *testing.T, e types.RuleEngine) []end {
	t.Helper()
	md := types.NewMetadata()
	md.PutValue("productType", "test")
	var mu sync.Mutex
	var ends []end
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.OnMsgAndWait(types.NewMsg(0, "TEST_MSG_TYPE1", types.JSON, md, diffInput), types.WithOnEnd(func(_ types.RuleContext, m types.RuleMsg, _ error, rel string) {
			mu.Lock()
			ends = append(ends, normalise(rel, m.GetData(), m.Metadata.Values()))
			mu.Unlock()
		}))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("plain RuleGo did not end")
	}
	return sortEnds(ends)
}

func oursEnds(t *testing.T, base, id string) []end {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"input": json.RawMessage(diffInput), "msgType": "TEST_MSG_TYPE1",
		"metadata": map[string]string{"productType": "test"}})
	resp, err := http.Post(base+"/api/v1/chains/"+id+"/run", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans runAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
		t.Fatalf("run: %d %v", resp.StatusCode, err)
	}
	if len(ans.Ends) == 0 {
		if ans.Relation == "" {
			return nil
		}
		return []end{normalise(ans.Relation, ans.Data, ans.Metadata)}
	}
	var ends []end
	for _, e := range ans.Ends {
		ends = append(ends, normalise(e.Relation, e.Data, e.Metadata))
	}
	return sortEnds(ends)
}

// postEndpoint sends the test message to a chain's embedded HTTP endpoint.
func postEndpoint(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/api/v1/test/x", "application/json", strings.NewReader(diffInput))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, volatile.ReplaceAll(b, []byte("#")))
}

func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := listenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func listenLoopback() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
