// Package fleet_test runs `ruleagent serve` replicas on one real Redis
// behind nginx (internal/fleettest) and shows what a run does across them.
// These tests are slow (they wait out a replica's heartbeat): make
// test-fleet runs them.
package fleet_test

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/fleettest"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

func TestMain(m *testing.M) { fleettest.Main(m) }

const storyChain = `{
  "ruleChain": {"id": "story", "name": "Story", "root": true},
  "metadata": {"nodes": [{"id": "agent", "type": "ai/agent", "name": "Story", "configuration": {
    "url": "${global.llm_url}", "key": "${global.api_key}", "model": "${global.model}",
    "systemPrompt": "You tell long stories.", "maxStep": 2}}], "connections": []}
}`

// frame is one SSE frame: its id and data.
type frame struct {
	id   uint64
	data string
}

// frames reads an SSE body's frames into out until it ends.
func frames(body *bufio.Scanner, out chan<- frame) {
	defer close(out)
	var cur frame
	for body.Scan() {
		line := body.Text()
		switch {
		case line == "" && cur.data != "":
			out <- cur
			cur = frame{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
}

func sse(t *testing.T, req *http.Request) (*http.Response, <-chan frame) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d via %s", req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("X-Upstream"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	ch := make(chan frame, 1000)
	go frames(sc, ch)
	return resp, ch
}

// kill -9 of the replica running a run: a client that rejoins the run
// through the load balancer (so on another replica) gets the events it
// missed that the log kept, then one terminal RUN_ERROR, code
// replica_lost, within the
// replica's heartbeat TTL and a janitor round; and the run is no longer
// listed.
func TestKilledReplicaRunEnds(t *testing.T) {
	redistest.Fleet(t)
	llm := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: strings.Repeat("and then ", 200), ChunkSize: 9, ChunkDelay: 100 * time.Millisecond}))
	chains := t.TempDir()
	if err := os.WriteFile(filepath.Join(chains, "story.json"), []byte(storyChain), 0o644); err != nil {
		t.Fatal(err)
	}
	f := fleettest.Start(t, fleettest.Options{Replicas: 3, Chains: chains,
		Args: []string{"--global", "llm_url=" + llm.URL, "--global", "model=m", "--global", "api_key=k"}})

	req, _ := http.NewRequest("POST", f.URL+"/api/v1/chains/story/run", strings.NewReader(`{"input":"go","stream":true,"runId":"run-killed"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, got := sse(t, req)
	owner := resp.Header.Get("X-Upstream")
	var last uint64
	for fr := range got {
		if fr.id != last+1 {
			t.Fatalf("id %d after %d", fr.id, last)
		}
		last = fr.id
		if last == 5 {
			break
		}
	}
	for _, r := range f.Replicas {
		if r.Addr == owner {
			r.Kill()
		}
	}
	resp.Body.Close()
	killed := time.Now()

	req, _ = http.NewRequest("GET", f.URL+"/api/v1/runs/run-killed/events", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	resp, rest := sse(t, req)
	defer resp.Body.Close()
	if up := resp.Header.Get("X-Upstream"); up == owner {
		t.Fatalf("the killed replica %s answered", up)
	}
	var tail []frame
	timeout := time.After(30 * time.Second)
read:
	for {
		select {
		case fr, ok := <-rest:
			if !ok {
				break read
			}
			tail = append(tail, fr)
		case <-timeout:
			t.Fatalf("the rejoined stream did not end within 30s: %d events", len(tail))
		}
	}
	took := time.Since(killed)
	if len(tail) == 0 {
		for _, r := range f.Replicas {
			t.Logf("replica %s:\n%s", r.Addr, r.Logs())
		}
		t.Fatalf("the rejoined stream (from %s, after %v) is empty", resp.Header.Get("X-Upstream"), took)
	}
	// The events the log kept after the client's last come in order; the
	// terminal event's log id may be lower, when the replica died before
	// writing events its client had: it is sent with an id above every id
	// of the run (server.lostEnd, wireID).
	for i, fr := range tail[:len(tail)-1] {
		if fr.id != last+uint64(i)+1 {
			t.Fatalf("event %d of the rejoined stream has id %d, want %d", i, fr.id, last+uint64(i)+1)
		}
	}
	end := tail[len(tail)-1].data
	if !strings.HasPrefix(end, `{"type":"RUN_ERROR"`) || !strings.Contains(end, `"code":"replica_lost"`) {
		t.Fatalf("the rejoined stream ends with %s", end)
	}
	for _, fr := range tail[:len(tail)-1] {
		if strings.HasPrefix(fr.data, `{"type":"RUN_`) {
			t.Fatalf("a second terminal event: %s", fr.data)
		}
	}
	if took > 15*time.Second {
		t.Errorf("the run ended %v after its replica was killed", took)
	}
	t.Logf("the run ended %v after its replica was killed, %d events rejoined", took, len(tail))

	for range 3 { // every live replica says the same
		lr, err := http.Get(f.URL + "/api/v1/runs")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		sc := bufio.NewScanner(lr.Body)
		for sc.Scan() {
			b.WriteString(sc.Text())
		}
		lr.Body.Close()
		if lr.StatusCode != 200 || strings.TrimSpace(b.String()) != "[]" {
			t.Errorf("runs listed by %s: %d %s", lr.Header.Get("X-Upstream"), lr.StatusCode, b.String())
		}
	}
}
