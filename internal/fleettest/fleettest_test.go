package fleettest

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

func TestMain(m *testing.M) { Main(m) }

// upstream GETs path through the load balancer and returns the replica
// that answered.
func upstream(t *testing.T, f *Fleet, path string) string {
	t.Helper()
	resp, err := http.Get(f.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d via %s\n%s", path, resp.StatusCode, resp.Header.Get("X-Upstream"), f.LB.ErrorLog())
	}
	return resp.Header.Get("X-Upstream")
}

// The harness itself: nginx spreads requests over the three replicas,
// skips one that was killed, takes it back when it restarts; a replica
// pauses and resumes; SIGTERM stops one cleanly.
func TestFleetHarness(t *testing.T) {
	redistest.Fleet(t)
	f := Start(t, Options{Replicas: 3})
	seen := map[string]int{}
	for range 9 {
		seen[upstream(t, f, "/healthz")]++
	}
	for _, r := range f.Replicas {
		if seen[r.Addr] != 3 {
			t.Errorf("round robin: %v", seen)
			break
		}
	}

	f.Replicas[0].Kill()
	for range 6 {
		if u := upstream(t, f, "/healthz"); u == f.Replicas[0].Addr {
			t.Fatalf("a killed replica answered")
		}
	}
	f.Replicas[0].Start(t)
	seen = map[string]int{}
	for range 9 {
		seen[upstream(t, f, "/healthz")]++
	}
	if seen[f.Replicas[0].Addr] == 0 {
		t.Errorf("the restarted replica gets nothing: %v", seen)
	}

	r := f.Replicas[1]
	r.Pause()
	c := http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := c.Get(r.URL + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("a paused replica answered")
	}
	r.Resume()
	if resp, err := c.Get(r.URL + "/healthz"); err != nil {
		t.Errorf("after resume: %v", err)
	} else {
		resp.Body.Close()
	}

	if !f.Replicas[2].Term(15 * time.Second) {
		t.Fatal("SIGTERM did not stop the replica")
	}
	if err := f.Replicas[2].Exit(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, f.Replicas[2].Logs())
	}

	// The Redis helpers the fleet tests use.
	f.Redis.FreezeFor(t, 100*time.Millisecond)
	f.Redis.Restart(t)
}

// One machine: one replica on its embedded stores, behind the same nginx.
func TestOneMachine(t *testing.T) {
	redistest.Fleet(t)
	f := Start(t, Options{Replicas: 1, NoRedis: true})
	if f.Redis != nil {
		t.Fatal("a Redis without asking")
	}
	if u := upstream(t, f, "/healthz"); u != f.Replicas[0].Addr {
		t.Errorf("answered by %q", u)
	}
}

// SSE goes through nginx as it is written: the first streamed chunk
// reaches the client long before the run ends.
func TestStreamsAreNotBuffered(t *testing.T) {
	redistest.Fleet(t)
	llm := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "aaaabbbbccccddddeeee", ChunkSize: 4, ChunkDelay: 200 * time.Millisecond}))
	chains := t.TempDir()
	dsl := `{"ruleChain":{"id":"hello","name":"Hello"},"metadata":{"firstNodeIndex":0,"connections":[],"nodes":[` +
		`{"id":"agent","type":"ai/agent","name":"Agent","configuration":{"systemPrompt":"Say hello.","maxRetries":0}}]}}`
	if err := os.WriteFile(filepath.Join(chains, "hello.json"), []byte(dsl), 0o644); err != nil {
		t.Fatal(err)
	}
	f := Start(t, Options{Replicas: 2, Chains: chains, Args: []string{"--global", "llm_url=" + llm.URL, "--global", "model=test-model"}})
	start := time.Now()
	resp, err := http.Post(f.URL+"/api/v1/chains/hello/run", "application/json", strings.NewReader(`{"input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var first, last time.Duration
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "TEXT_MESSAGE_CONTENT") && first == 0 {
			first = time.Since(start)
		}
		if strings.HasPrefix(line, "data:") {
			last = time.Since(start)
		}
	}
	if first == 0 || last-first < 600*time.Millisecond {
		t.Errorf("first chunk at %s, end at %s: the stream was buffered", first, last)
	}
}
