package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

const leadPrompt = "You are the lead agent."

// pauseScript: the guarded agent looks a key up (its calls need
// approval), then answers with what it found (llmtest.GuardedRule); the
// lead agent delegates to it, then answers with what it said.
func pauseScript() llmtest.Script {
	return llmtest.Route(
		llmtest.GuardedRule(),
		llmtest.Rule{Match: llmtest.SystemContains(leadPrompt), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("Done: " + res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("helper", `{"message":"look it up"}`))
		})},
	)
}

// pauseChains writes the lookup chain, the guarded agent (approval of
// lookup, a session per thread) and the lead agent (the guarded one as a
// sub-agent).
func pauseChains(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chains := llmtest.GuardedChains(map[string]any{"session": map[string]any{"scope": "thread"}})
	chains["lead"] = llmtest.AgentChain("lead", leadPrompt, map[string]any{"tools": []any{map[string]any{"type": "agent", "name": "helper", "targetId": "guarded"}}})
	llmtest.WriteChains(t, dir, chains)
	return dir
}

// stream posts body to path and returns the SSE stream's events.
func (p *serverProcess) stream(path string, body any) []map[string]any {
	p.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(p.base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		msg, _ := io.ReadAll(resp.Body)
		p.t.Fatalf("%s: %d %s", path, resp.StatusCode, msg)
	}
	var raw [][]byte
	var evs []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			p.t.Fatalf("bad event %q", data)
		}
		raw, evs = append(raw, []byte(data)), append(evs, ev)
	}
	for _, v := range aguicheck.Check(raw) {
		p.t.Errorf("%s: AG-UI violation: %v", path, v)
	}
	return evs
}

// get returns the JSON answer of a GET.
func (p *serverProcess) get(path string, into any) {
	p.t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		p.t.Fatal(err)
	}
}

// interruptOf returns the id of the one interrupt a paused stream ended on.
func interruptOf(t *testing.T, evs []map[string]any) string {
	t.Helper()
	last := evs[len(evs)-1]
	out, _ := last["outcome"].(map[string]any)
	ins, _ := out["interrupts"].([]any)
	if last["type"] != "RUN_FINISHED" || out["type"] != "interrupt" || len(ins) != 1 {
		t.Fatalf("the run did not pause on one interrupt: %v", last)
	}
	return ins[0].(map[string]any)["id"].(string)
}

func hasEvent(evs []map[string]any, typ, field, contains string) bool {
	for _, ev := range evs {
		if v, _ := ev[field].(string); ev["type"] == typ && strings.Contains(v, contains) {
			return true
		}
	}
	return false
}

// A paused run outlives its process. Paused over the run route, the real
// binary stops at once on SIGTERM (a paused run is a checkpoint, not a run
// in progress: the 30 s grace is not waited for); the next process on the
// same --data lists the run as waiting, takes the answer, runs the
// approved call once and ends the run, whose session turn is kept; a
// second answer gets 409. Paused inside a sub-agent over AG-UI, the binary
// is killed with SIGKILL; the next process takes the AG-UI resume and the
// run goes on inside the sub-agent, whose lifecycle events open again.
func TestPausedRunSurvivesARestart(t *testing.T) {
	bin := buildBinary(t)
	llm := llmtest.NewServer(t, pauseScript())
	chains := pauseChains(t)

	t.Run("SIGTERM", func(t *testing.T) {
		data := t.TempDir()
		p := startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		paused := p.stream("/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-1", "runId": "run-1", "stream": true})
		id := interruptOf(t, paused)
		start := time.Now()
		p.kill(syscall.SIGTERM)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("SIGTERM with a paused run took %s", took)
		}

		p = startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		var list []map[string]any
		p.get("/api/v1/runs", &list)
		if len(list) != 1 || list[0]["runId"] != "run-1" || list[0]["status"] != "waiting" || !strings.Contains(toJSON(list[0]["interrupts"]), id) {
			t.Fatalf("runs after the restart: %v", list)
		}
		resumed := p.stream("/api/v1/runs/run-1/resume", map[string]any{"stream": true,
			"resume": []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}})
		last := resumed[len(resumed)-1]
		if last["type"] != "RUN_FINISHED" || last["result"] != `Result: {"found":"A-1"}` || !hasEvent(resumed, "TOOL_CALL_RESULT", "content", `{"found":"A-1"}`) {
			t.Fatalf("the resumed run: %v", resumed)
		}
		if resumed[0]["type"] != "RUN_STARTED" || resumed[0]["runId"] != "run-1" {
			t.Errorf("the resumed stream starts with %v", resumed[0])
		}
		again := p.post("/api/v1/runs/run-1/resume", map[string]any{
			"resume": []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}})
		if e, _ := again["error"].(string); !strings.Contains(e, "not open") {
			t.Errorf("a second answer: %v", again)
		}
		// The turn the pause split is in the session, once.
		if out := p.post("/api/v1/chains/guarded/run", map[string]any{"input": "again?", "threadId": "t-1"}); out["data"] != `I remember: Result: {"found":"A-1"}` {
			t.Errorf("the session after the resumed run: %v", out)
		}
		p.get("/api/v1/runs", &list)
		if len(list) != 0 {
			t.Errorf("runs left: %v", list)
		}
	})

	t.Run("SIGKILL inside a sub-agent, AG-UI", func(t *testing.T) {
		data := t.TempDir()
		p := startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		input := map[string]any{"threadId": "t-2", "runId": "r-1", "messages": []any{map[string]any{"id": "u1", "role": "user", "content": "delegate it"}},
			"forwardedProps": map[string]any{"ruleagent": map[string]any{"subagentEvents": true}}}
		paused := p.stream("/api/v1/chains/lead/agui", input)
		id := interruptOf(t, paused)
		if !hasEvent(paused, "SUBAGENT_FINISHED", "type", "SUBAGENT_FINISHED") {
			t.Fatalf("the sub-agent was not suspended: %v", paused)
		}
		p.kill(syscall.SIGKILL)

		p = startServer(t, bin, llm.URL, "--chains", chains, "--data", data)
		input["runId"] = "r-2"
		input["resume"] = []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
		resumed := p.stream("/api/v1/chains/lead/agui", input)
		last := resumed[len(resumed)-1]
		if last["type"] != "RUN_FINISHED" || last["result"] != `Done: Result: {"found":"A-1"}` {
			t.Fatalf("the resumed run: %v", resumed)
		}
		if resumed[0]["runId"] != "r-2" || !hasEvent(resumed, "SUBAGENT_STARTED", "type", "SUBAGENT_STARTED") ||
			!hasEvent(resumed, "SUBAGENT_FINISHED", "result", `Result: {"found":"A-1"}`) {
			t.Errorf("the sub-agent did not go on in the resumed run: %v", resumed)
		}
	})
}

// Two replicas on one Redis: a run paused on one is listed and answered on
// the other, which goes on with it; a second answer, on the first, gets
// 409.
func TestPausedRunAnsweredOnAnotherReplica(t *testing.T) {
	bin := buildBinary(t)
	llm := llmtest.NewServer(t, pauseScript())
	chains := pauseChains(t)
	rs := redistest.Start(t)
	a := startServer(t, bin, llm.URL, "--chains", chains, "--data", t.TempDir(), "--session-store", rs.URL)
	b := startServer(t, bin, llm.URL, "--chains", chains, "--data", t.TempDir(), "--session-store", rs.URL)
	paused := a.stream("/api/v1/chains/lead/agui", map[string]any{"threadId": "t-f", "runId": "r-f1",
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": "delegate it"}}})
	id := interruptOf(t, paused)
	var list []map[string]any
	b.get("/api/v1/runs", &list)
	if len(list) != 1 || list[0]["runId"] != "r-f1" || list[0]["status"] != "waiting" {
		t.Fatalf("b's runs: %v", list)
	}
	answer := []any{map[string]any{"interruptId": id, "status": "resolved", "payload": map[string]any{"approved": true}}}
	resumed := b.stream("/api/v1/chains/lead/agui", map[string]any{"threadId": "t-f", "runId": "r-f2", "resume": answer,
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": "delegate it"}}})
	if last := resumed[len(resumed)-1]; last["type"] != "RUN_FINISHED" || last["result"] != `Done: Result: {"found":"A-1"}` {
		t.Fatalf("the run resumed on b: %v", resumed)
	}
	again := a.post("/api/v1/runs/r-f1/resume", map[string]any{"resume": answer})
	if e, _ := again["error"].(string); !strings.Contains(e, "not open") {
		t.Errorf("a second answer on a: %v", again)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
