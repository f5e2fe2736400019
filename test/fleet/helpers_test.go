package fleet_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/fleettest"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

const storyPrompt = "You tell long stories."

// fleetScript: the story agent tells a long story, in chunks 50 ms apart
// (about 3 s); the guarded agent looks a key up (a call that needs
// approval), then answers with what it found (llmtest.GuardedRule).
func fleetScript() llmtest.Script {
	return llmtest.Route(
		llmtest.GuardedRule(),
		llmtest.Rule{Match: llmtest.SystemContains(storyPrompt), Script: llmtest.Always(llmtest.Response{
			Text: strings.Repeat("and then ", 60), ChunkSize: 9, ChunkDelay: 50 * time.Millisecond})},
	)
}

// controlChains writes the story agent, the lookup chain, and the guarded
// agent (its lookup calls need approval).
func controlChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chains := llmtest.GuardedChains(nil)
	chains["story"] = llmtest.AgentChain("story", storyPrompt, nil)
	llmtest.WriteChains(t, dir, chains)
	return dir
}

// startControlFleet starts three replicas on Redis behind nginx with the
// control chains and the scripted LLM, and waits until each is ready.
func startControlFleet(t *testing.T) *fleettest.Fleet {
	t.Helper()
	return startControlFleetWith(t, fleettest.Options{Replicas: 3})
}

// startControlFleetWith starts the fleet o describes with the control
// chains and the scripted LLM, and waits until each replica is ready.
func startControlFleetWith(t *testing.T, o fleettest.Options) *fleettest.Fleet {
	t.Helper()
	llm := llmtest.NewServer(t, fleetScript())
	o.Chains = controlChains(t)
	o.Args = append(o.Args, "--global", "llm_url="+llm.URL, "--global", "model=m", "--grace", "20s")
	f := fleettest.Start(t, o)
	ready(t, f)
	return f
}

// ready waits up to 15 s for every replica's /readyz to answer 200.
func ready(t *testing.T, f *fleettest.Fleet) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, r := range f.Replicas {
		for {
			resp, err := http.Get(r.URL + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d not ready: %v", r.Index, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// nextNot makes the load balancer's next pick a replica other than addr:
// nginx's round robin takes the replicas in turn, so once addr answered a
// request, the next goes to another one.
func nextNot(t *testing.T, f *fleettest.Fleet, addr string) {
	t.Helper()
	for range 6 {
		resp, err := http.Get(f.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Upstream") == addr {
			return
		}
	}
	t.Fatalf("replica %s never answered through the load balancer", addr)
}

// post sends a JSON body to url and returns the status, the body and the
// replica that answered.
func post(t *testing.T, url string, body any) (int, []byte, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header.Get("X-Upstream")
}

// rejoin GETs run id's events through the load balancer after id after,
// and returns the response and its frames.
func rejoin(t *testing.T, f *fleettest.Fleet, id string, after uint64) (*http.Response, <-chan frame) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.URL+"/api/v1/runs/"+id+"/events", nil)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(after, 10))
	}
	return sse(t, req)
}

// drain reads the frames until the stream ends (at most d).
func drain(t *testing.T, fs <-chan frame, d time.Duration) []frame {
	t.Helper()
	var out []frame
	timeout := time.After(d)
	for {
		select {
		case fr, ok := <-fs:
			if !ok {
				return out
			}
			out = append(out, fr)
		case <-timeout:
			t.Fatalf("the stream did not end within %s: %d events", d, len(out))
		}
	}
}

// terminalCount counts the terminal events of a run's frames.
func terminalCount(fs []frame) int {
	n := 0
	for _, fr := range fs {
		if strings.HasPrefix(fr.data, `{"type":"RUN_FINISHED"`) || strings.HasPrefix(fr.data, `{"type":"RUN_ERROR"`) {
			n++
		}
	}
	return n
}

// checkSequence checks that frames carry the ids 1..len in order, each
// once.
func checkSequence(t *testing.T, what string, fs []frame) {
	t.Helper()
	for i, fr := range fs {
		if fr.id != uint64(i)+1 {
			t.Fatalf("%s: event %d has id %d, want %d (%s)", what, i, fr.id, i+1, fr.data)
		}
	}
}
