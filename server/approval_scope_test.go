package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// "Always" covers exactly the approved parsed call: the same command with
// a redirect, in another work_dir or with a variable set is asked about
// again, and the question shows the redirects, variables and work_dir.
func TestAlwaysCoversTheExactShellCall(t *testing.T) {
	e := newAPIEnv(t, Options{})
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	dsl, _ := json.Marshal(map[string]any{"ruleChain": map[string]any{"id": "exact"}, "metadata": map[string]any{"nodes": []any{
		agentNode(promptExact, map[string]any{"maxStep": 8, "approval": map[string]any{"commands": []any{"echo"}},
			"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"workDir": ws, "sandbox": "off"}}}})}}})
	if code, body, _ := e.do("PUT", "/api/v1/chains/exact", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	code, body, _ := e.do("POST", "/api/v1/chains/exact/run", map[string]any{"input": "go", "threadId": "t-exact"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	runID := ans.RunID
	resume := func(payload map[string]any) runAnswer {
		t.Helper()
		code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": []any{
			map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": payload}}})
		var next runAnswer
		if code != 200 || json.Unmarshal(body, &next) != nil {
			t.Fatalf("resume: %d %s", code, body)
		}
		return next
	}
	if m := ans.Interrupts[0].Message; !strings.HasPrefix(m, "Approve bash echo hi") {
		t.Fatalf("first question: %q", m)
	}
	// Approved always: the second `echo hi` asks nobody; the third, with a
	// redirect, asks again and says so.
	ans = resume(map[string]any{"approved": true, "always": true})
	if ans.Outcome != "interrupt" || !strings.Contains(ans.Interrupts[0].Message, "echo hi with redirects > out.txt") ||
		!strings.Contains(string(ans.Interrupts[0].Metadata), `"redirects":["\u003e out.txt"]`) {
		t.Fatalf("with a redirect: %+v", ans)
	}
	ans = resume(map[string]any{"approved": true, "always": true})
	if ans.Outcome != "interrupt" || !strings.Contains(ans.Interrupts[0].Message, "echo hi in work_dir sub") ||
		!strings.Contains(string(ans.Interrupts[0].Metadata), `"workDirs":["sub"]`) {
		t.Fatalf("in another work_dir: %+v", ans)
	}
	ans = resume(map[string]any{"approved": true})
	if ans.Outcome != "interrupt" || !strings.Contains(ans.Interrupts[0].Message, "echo hi setting GIT_DIR=x") {
		t.Fatalf("with a variable: %+v", ans)
	}
	if ans = resume(map[string]any{"approved": false}); ans.Outcome != "success" {
		t.Fatalf("end: %+v", ans)
	}
	if _, err := os.Stat(filepath.Join(ws, "out.txt")); err != nil {
		t.Fatalf("the approved redirect did not run: %v", err)
	}
}

// An interrupt is answered only through its own thread (and chain): an
// AG-UI resume on another thread is refused, and the run goes on waiting
// for its own thread's answer.
func TestCrossThreadAnswerRefused(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-own", "runId": "r-own", "messages": userMsg("lookup it")})
	evs := sseEvents(t, body)
	var last struct {
		Outcome struct {
			Interrupts []struct{ ID string } `json:"interrupts"`
		} `json:"outcome"`
	}
	if code != 200 || json.Unmarshal(evs[len(evs)-1], &last) != nil || len(last.Outcome.Interrupts) != 1 {
		t.Fatalf("run: %d %s", code, body)
	}
	answer := []any{map[string]any{"interruptId": last.Outcome.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}
	for name, req := range map[string]struct {
		path string
		body map[string]any
	}{
		"another thread":            {"/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-other", "runId": "r-x", "messages": userMsg("hi"), "resume": answer}},
		"another chain":             {"/api/v1/chains/tools/agui", map[string]any{"threadId": "t-own", "runId": "r-y", "messages": userMsg("hi"), "resume": answer}},
		"run route, another thread": {"/api/v1/runs/r-own/resume", map[string]any{"threadId": "t-other", "resume": answer}},
	} {
		code, body, _ := e.do("POST", req.path, req.body)
		if code != http.StatusConflict || strings.Contains(string(body), "found") {
			t.Fatalf("%s: %d %s", name, code, body)
		}
	}
	code, body, _ = e.do("POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-own", "runId": "r-own2", "resume": answer})
	if evs := sseEvents(t, body); code != 200 || !strings.Contains(string(evs[len(evs)-1]), `Result: {\"found\":\"A-1\"}`) {
		t.Fatalf("own thread: %d %s", code, body)
	}
}

// Resume is one atomic step: of several answers to the same interrupt sent
// at once, exactly one gets the rest of the run (200, a stream ending with
// its terminal event) and the others 409; no stream is left open.
func TestConcurrentResumesOneWins(t *testing.T) {
	e := newAPIEnv(t, Options{})
	client := &http.Client{Timeout: 15 * time.Second}
	post := func(path string, body any) (int, []byte) {
		b, _ := json.Marshal(body)
		resp, err := client.Post(e.base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return 0, nil
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("%s: reading: %v", path, err)
		}
		return resp.StatusCode, out
	}
	for _, route := range []string{"run", "agui"} {
		code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-race-" + route})
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
			t.Fatalf("run: %d %s", code, body)
		}
		answer := []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}
		const racers = 6
		var wg sync.WaitGroup
		start := make(chan struct{})
		codes := make([]int, racers)
		bodies := make([][]byte, racers)
		for i := range racers {
			wg.Go(func() {
				<-start
				if route == "run" {
					codes[i], bodies[i] = post("/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": answer, "stream": true})
				} else {
					codes[i], bodies[i] = post("/api/v1/chains/guarded/agui", map[string]any{"threadId": ans.ThreadID,
						"runId": fmt.Sprintf("r-%s-%d", route, i), "resume": answer})
				}
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, code := range codes {
			switch code {
			case http.StatusOK:
				won++
				evs := sseEvents(t, bodies[i])
				if last := string(evs[len(evs)-1]); !strings.Contains(last, `"type":"RUN_FINISHED"`) || !strings.Contains(last, `Result: {\"found\":\"A-1\"}`) {
					t.Fatalf("%s: the winning stream ended with %s", route, last)
				}
			case http.StatusConflict:
			default:
				t.Fatalf("%s: %d %s", route, code, bodies[i])
			}
		}
		if won != 1 {
			t.Fatalf("%s: %d requests got the run (%v)", route, won, codes)
		}
	}
}
