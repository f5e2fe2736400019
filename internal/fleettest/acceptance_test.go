package fleettest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

// chatChain is an agent that keeps a thread's conversation.
func chatChain(id, prompt string) string {
	return `{"ruleChain":{"id":"` + id + `","name":"` + id + `"},"metadata":{"firstNodeIndex":0,"connections":[],"nodes":[` +
		`{"id":"agent","type":"ai/agent","name":"Agent","configuration":{"systemPrompt":"` + prompt + `","maxRetries":0,"session":{"scope":"thread"}}}]}}`
}

// fleetLLM answers "slow ..." inputs slowly (40 chunks, 100 ms apart) and
// the others at once.
func fleetLLM(t *testing.T) *llmtest.Server {
	return llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.UserContains("slow"), Script: llmtest.Always(llmtest.Response{Text: strings.Repeat("abcd", 40), ChunkSize: 4, ChunkDelay: 100 * time.Millisecond})},
		llmtest.Rule{Match: func(*llmtest.Request) bool { return true }, Script: llmtest.Always(llmtest.Response{Text: "fine"})},
	))
}

// startChatFleet starts three replicas on Redis with the chain chat in
// their folder and the scripted LLM.
func startChatFleet(t *testing.T, llm *llmtest.Server, extra ...string) *Fleet {
	chains := t.TempDir()
	if err := os.WriteFile(filepath.Join(chains, "chat.json"), []byte(chatChain("chat", "You chat.")), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--global", "llm_url=" + llm.URL, "--global", "model=test-model", "--grace", "20s"}, extra...)
	return Start(t, Options{Replicas: 3, Chains: chains, Args: args})
}

// runResult is a streamed run: its events' types, the terminal one, and
// the replica that ran it.
type runResult struct {
	upstream string
	status   int
	types    []string
	last     string
}

// ok: the run finished (not cancelled, not failed).
func (r runResult) ok() bool {
	return r.status == 200 && strings.Contains(r.last, `"type":"RUN_FINISHED"`) && !strings.Contains(r.last, `"outcome"`)
}

// run streams a run of chain chat on thread at base; onEvent, when set,
// sees each event's data as it comes.
func run(t *testing.T, base, thread, input string, onEvent func(string)) runResult {
	t.Helper()
	body := `{"input":"` + input + `","threadId":"` + thread + `","stream":true}`
	resp, err := http.Post(base+"/api/v1/chains/chat/run", "application/json", strings.NewReader(body))
	if err != nil {
		return runResult{status: -1, last: err.Error()}
	}
	defer resp.Body.Close()
	res := runResult{upstream: resp.Header.Get("X-Upstream"), status: resp.StatusCode}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		res.last = string(b)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type string }
		_ = json.Unmarshal([]byte(d), &ev)
		res.types = append(res.types, ev.Type)
		res.last = d
		if onEvent != nil {
			onEvent(d)
		}
	}
	return res
}

// eventually retries a run until it succeeds, for up to d; it returns how
// long that took.
func eventually(t *testing.T, d time.Duration, what string, try func() runResult) time.Duration {
	t.Helper()
	start := time.Now()
	var last runResult
	for time.Since(start) < d {
		if last = try(); last.ok() {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: no successful run within %s; last: %d %s", what, d, last.status, last.last)
	return 0
}

// ready waits up to d for every replica's /readyz to answer 200.
func allReady(t *testing.T, f *Fleet, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, r := range f.Replicas {
		for {
			resp, err := http.Get(r.URL + "/readyz")
			var body []byte
			if err == nil {
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d not ready within %s: %v %s", r.Index, d, err, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// A conversation goes on across replicas behind a round-robin load
// balancer: each turn lands on another replica, and the model sees the
// earlier turns.
func TestFleetConversationAcrossReplicas(t *testing.T) {
	redistest.Fleet(t)
	llm := fleetLLM(t)
	f := startChatFleet(t, llm)
	allReady(t, f, 10*time.Second)
	seen := map[string]bool{}
	for i, in := range []string{"one", "two", "three"} {
		r := run(t, f.URL, "conv", in, nil)
		if !r.ok() {
			t.Fatalf("turn %d: %d %s", i, r.status, r.last)
		}
		seen[r.upstream] = true
	}
	if len(seen) != 3 {
		t.Errorf("the turns ran on %v, not on three replicas", seen)
	}
	var users []string
	for _, m := range llm.LastRequest().Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if strings.Join(users, ",") != "one,two,three" {
		t.Errorf("the third turn's model saw the user messages %q", users)
	}
}

// A chain PUT on one replica runs on every replica within a second, with
// the same fleet version and hash everywhere; a DELETE too.
func TestFleetDeployReachesEveryReplica(t *testing.T) {
	redistest.Fleet(t)
	f := startChatFleet(t, fleetLLM(t))
	allReady(t, f, 10*time.Second)
	req, _ := http.NewRequest("PUT", f.Replicas[0].URL+"/api/v1/chains/greet", strings.NewReader(chatChain("greet", "You greet.")))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	var wg sync.WaitGroup
	took := make([]time.Duration, len(f.Replicas))
	for i, r := range f.Replicas {
		wg.Go(func() {
			for time.Since(start) < 5*time.Second {
				if resp, err := http.Get(r.URL + "/api/v1/chains/greet"); err == nil {
					resp.Body.Close()
					if resp.StatusCode == 200 {
						took[i] = time.Since(start)
						return
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	for i, d := range took {
		if d == 0 || d > time.Second {
			t.Errorf("replica %d ran greet after %s (0: never)", i, d)
		}
	}
	t.Logf("deploy seen by the replicas after %v", took)
	hashes := map[string]bool{}
	for _, r := range f.Replicas {
		resp, err := http.Get(r.URL + "/api/v1/chains")
		if err != nil {
			t.Fatal(err)
		}
		var list []struct {
			ID    string
			Fleet *struct {
				Version, Applied int64
				Hash             string
			}
		}
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		for _, c := range list {
			if c.ID == "greet" && c.Fleet != nil && c.Fleet.Version == c.Fleet.Applied {
				hashes[c.Fleet.Hash] = true
			}
		}
	}
	if len(hashes) != 1 {
		t.Errorf("the replicas list greet's fleet hash as %v", hashes)
	}

	req, _ = http.NewRequest("DELETE", f.Replicas[1].URL+"/api/v1/chains/greet", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	time.Sleep(time.Second)
	for _, r := range f.Replicas {
		if resp, err := http.Get(r.URL + "/api/v1/chains/greet"); err == nil {
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("replica %d still has greet a second after its DELETE: %d", r.Index, resp.StatusCode)
			}
		}
	}
}

// firstChunk starts a slow run on thread at base and returns once its
// first text chunk arrived; the run's result comes on the channel.
func firstChunk(t *testing.T, base, thread string) <-chan runResult {
	t.Helper()
	started := make(chan struct{})
	var once sync.Once
	out := make(chan runResult, 1)
	go func() {
		out <- run(t, base, thread, "slow please", func(d string) {
			if strings.Contains(d, "TEXT_MESSAGE_CONTENT") {
				once.Do(func() { close(started) })
			}
		})
		once.Do(func() { close(started) })
	}()
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the slow run did not start streaming")
	}
	return out
}

// The faults of a fleet, one after the other: kill -9 of the replica
// running a run (its thread is usable again within a few seconds, from
// the other replicas); Redis frozen for 5 s (every replica serves again
// after, and its readiness says ok); Redis restarted empty while a
// replica starts (the replica waits for it, saying so, instead of
// exiting; the chains come back); SIGTERM of a replica with a run in
// flight (the run finishes, the process exits cleanly, the others serve).
func TestFleetSurvivesFaults(t *testing.T) {
	redistest.Fleet(t)
	f := startChatFleet(t, fleetLLM(t))
	allReady(t, f, 10*time.Second)

	// kill -9 mid-run.
	victim := f.Replicas[1]
	cut := firstChunk(t, victim.URL, "killed")
	victim.Kill()
	if r := <-cut; r.ok() {
		t.Fatal("a killed replica's run finished")
	}
	took := eventually(t, 10*time.Second, "the killed replica's thread", func() runResult { return run(t, f.URL, "killed", "again", nil) })
	t.Logf("the killed replica's thread was usable again after %s", took)
	victim.Start(t)

	// Redis frozen for 5 s: the replicas say it in /readyz meanwhile.
	f.Redis.Freeze(t)
	frozeAt := time.Now()
	time.Sleep(2 * time.Second)
	c := http.Client{Timeout: 3 * time.Second}
	if resp, err := c.Get(f.Replicas[0].URL + "/readyz"); err != nil {
		t.Errorf("readyz with Redis frozen: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(string(b), `"name":"redis","ok":false`) {
			t.Errorf("readyz with Redis frozen: %d %s", resp.StatusCode, b)
		}
	}
	time.Sleep(5*time.Second - time.Since(frozeAt))
	f.Redis.Thaw(t)
	took = eventually(t, 10*time.Second, "after Redis thawed", func() runResult { return run(t, f.URL, "frozen", "hello", nil) })
	t.Logf("served again %s after Redis thawed", took)
	for i := range f.Replicas {
		eventually(t, 10*time.Second, "each replica after the freeze", func() runResult { return run(t, f.Replicas[i].URL, "frozen", "hi", nil) })
	}
	allReady(t, f, 10*time.Second)

	// Redis restarted, empty, while a replica starts.
	late := f.Replicas[2]
	late.Kill()
	f.Redis.Kill(t)
	req, _ := http.NewRequest("PUT", f.Replicas[0].URL+"/api/v1/chains/lost", strings.NewReader(chatChain("lost", "You are lost.")))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Errorf("PUT with Redis down: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("PUT with Redis down: %d %s", resp.StatusCode, b)
		}
	}
	redisBack := time.AfterFunc(4*time.Second, func() { f.Redis.Start(t) })
	defer redisBack.Stop()
	late.Start(t)
	if logs := late.Logs(); !strings.Contains(logs, "waiting for Redis (attempt 1)") ||
		!strings.Contains(logs, "WARNING: Redis persistence: none") {
		t.Errorf("the replica did not say it waits for Redis, or that Redis does not persist:\n%s", logs)
	}
	allReady(t, f, 15*time.Second)
	for _, r := range f.Replicas {
		eventually(t, 10*time.Second, "each replica after the Redis restart", func() runResult { return run(t, r.URL, "restarted", "hi", nil) })
	}

	// SIGTERM drains: the run in flight finishes, the process exits 0.
	term := f.Replicas[0]
	inflight := firstChunk(t, term.URL, "drained")
	if !term.Term(20 * time.Second) {
		t.Fatal("SIGTERM did not stop the replica")
	}
	if r := <-inflight; !r.ok() {
		t.Errorf("the run in flight at SIGTERM: %d %s", r.status, r.last)
	}
	if err := term.Exit(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, term.Logs())
	}
	for range 4 {
		if r := run(t, f.URL, "after-term", "hi", nil); !r.ok() {
			t.Errorf("through the load balancer after a SIGTERM: %d %s", r.status, r.last)
		}
	}
}
