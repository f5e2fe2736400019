package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/server/runs"
)

func TestRunRoute(t *testing.T) {
	e := newAPIEnv(t, Options{})

	// JSON: the final message, with the run's ids in headers and body.
	code, body, hdr := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hello", "metadata": map[string]any{"userId": "u1", "n": 3}, "threadId": "t-1"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Data != "Hello! You said: hello" || ans.Relation != "Success" ||
		ans.Outcome != "success" || ans.ThreadID != "t-1" || hdr.Get("X-Run-Id") != ans.RunID || hdr.Get("X-Thread-Id") != "t-1" ||
		ans.Metadata["userId"] != "u1" || ans.Metadata["n"] != "3" || len(ans.Usage) != 1 {
		t.Fatalf("run: %d %s %v", code, body, hdr)
	}

	// A failing chain: its error and code, relation Failure.
	code, body, _ = e.do("POST", "/api/v1/chains/broken/run", map[string]any{"input": "hello"})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Relation != "Failure" || ans.Outcome != "error" || ans.ErrorCode != "llm_error" ||
		!strings.Contains(ans.Error, "the model refuses this request") {
		t.Fatalf("failing run: %d %s", code, body)
	}

	// Stream: the same run as AG-UI events over SSE, by body flag or by
	// the Accept header.
	for _, tc := range []struct {
		body map[string]any
		hdr  []string
	}{
		{map[string]any{"input": "hello", "stream": true}, nil},
		{map[string]any{"input": "hello"}, []string{"Accept", "text/event-stream"}},
	} {
		code, body, hdr = e.do("POST", "/api/v1/chains/chat/run", tc.body, tc.hdr...)
		evs := sseEvents(t, body)
		if code != 200 || hdr.Get("Content-Type") != "text/event-stream" || len(evs) < 5 {
			t.Fatalf("stream: %d %s", code, body)
		}
		for _, v := range aguicheck.Check(evs) {
			t.Errorf("AG-UI violation: %v", v)
		}
		if !strings.Contains(string(evs[0]), `"runId":"`+hdr.Get("X-Run-Id")+`"`) || !strings.Contains(string(evs[len(evs)-1]), `"type":"RUN_FINISHED"`) {
			t.Fatalf("stream ends: %s ... %s", evs[0], evs[len(evs)-1])
		}
	}

	// Bad requests.
	for _, tc := range []struct {
		path string
		body any
		code int
	}{
		{"/api/v1/chains/nope/run", map[string]any{"input": "x"}, 404},
		{"/api/v1/chains/chat/run", map[string]any{}, 400},
		{"/api/v1/chains/chat/run", `{"input":`, 400},
		{"/api/v1/chains/chat/run", map[string]any{"input": 42}, 400},
	} {
		if code, body, _ := e.do("POST", tc.path, tc.body); code != tc.code || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s %v: %d %s", tc.path, tc.body, code, body)
		}
	}
}

// A run in progress is listed with its progress; a cancel request stops it
// (the LLM sees its request aborted) and it ends with one terminal event,
// cancelled.
func TestRunsListAndCancel(t *testing.T) {
	e := newAPIEnv(t, Options{})
	events, done := e.streamRun("slow", "run-to-cancel")
	waitEvent(t, events, "TEXT_MESSAGE_CONTENT")

	code, body, _ := e.do("GET", "/api/v1/runs", nil)
	var list []runs.Info
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list) != 1 || list[0].RunID != "run-to-cancel" ||
		list[0].ChainID != "slow" || list[0].Source != "run" || list[0].Step != 1 {
		t.Fatalf("runs: %d %s", code, body)
	}
	if code, body, _ = e.do("POST", "/api/v1/runs/run-to-cancel/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	all := <-done
	terminals := 0
	for _, ev := range all {
		if strings.Contains(ev, `"type":"RUN_FINISHED"`) || strings.Contains(ev, `"type":"RUN_ERROR"`) {
			terminals++
		}
	}
	if last := all[len(all)-1]; terminals != 1 || !strings.Contains(last, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("%d terminal events, last %s", terminals, last)
	}
	if !llmAborted(e, promptSlow) {
		t.Fatal("the LLM request was not aborted")
	}
	if code, _, _ = e.do("POST", "/api/v1/runs/run-to-cancel/cancel", nil); code != 404 {
		t.Fatalf("cancel of an ended run: %d", code)
	}
	if e.store.runs.Active() != 0 {
		t.Fatal("the run is still registered")
	}
}

// A client that disconnects cancels its run.
func TestClientDisconnectCancelsTheRun(t *testing.T) {
	e := newAPIEnv(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/api/v1/chains/slow/run", strings.NewReader(`{"input":"go","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()
	waitEvent(t, events, "TEXT_MESSAGE_CONTENT")
	cancel()
	resp.Body.Close()
	if !llmAborted(e, promptSlow) {
		t.Fatal("the LLM request was not aborted after the client went away")
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.store.runs.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// streamRun starts a streamed run and returns its SSE lines as they come,
// and all its data payloads once it ends.
func (e *apiEnv) streamRun(chain, runID string) (<-chan string, <-chan []string) {
	e.t.Helper()
	return e.streamRunBody(chain, map[string]any{"input": "go", "stream": true, "runId": runID})
}

// streamRunBody is streamRun with the run route's body.
func (e *apiEnv) streamRunBody(chain string, body map[string]any) (<-chan string, <-chan []string) {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", e.base+"/api/v1/chains/"+chain+"/run", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	lines := make(chan string, 1000)
	done := make(chan []string, 1)
	go func() {
		defer resp.Body.Close()
		var all []string
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				all = append(all, d)
				select {
				case lines <- d:
				default:
				}
			}
		}
		done <- all
	}()
	return lines, done
}

// waitEvent waits for an event of type typ on lines.
func waitEvent(t *testing.T, lines <-chan string, typ string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the stream ended before %s", typ)
			}
			if strings.Contains(l, `"type":"`+typ+`"`) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s within 10s", typ)
		}
	}
}

// 50 concurrent streaming AG-UI runs, each a well-formed stream, through
// the real client.
func TestConcurrentAGUIStreams(t *testing.T) {
	e := newAPIEnv(t, Options{})
	var scenarios []map[string]any
	for i := range 50 {
		chain, text := "chat", fmt.Sprintf("hello %d", i)
		if i%2 == 1 {
			chain, text = "tools", "lookup please"
		}
		scenarios = append(scenarios, map[string]any{"name": fmt.Sprint(i), "chain": chain, "messages": userMsg(text)})
	}
	res := e.runAGUI(true, scenarios...)
	if len(res) != 50 {
		t.Fatalf("%d results", len(res))
	}
	var mu sync.Mutex
	for name, r := range res {
		evs := checkRun(t, name, r.Runs[0])
		mu.Lock()
		if last := evs[len(evs)-1]; last["type"] != "RUN_FINISHED" {
			t.Errorf("%s ended with %v", name, last)
		}
		mu.Unlock()
	}
}

// A stream that waits (here for the LLM) gets a comment line after each
// heartbeat interval of silence, so that proxies keep it open.
func TestSSEHeartbeat(t *testing.T) {
	e := newAPIEnv(t, Options{Heartbeat: 150 * time.Millisecond})
	code, body, _ := e.do("POST", "/api/v1/chains/pause/agui", map[string]any{"threadId": "t", "runId": "r",
		"messages": userMsg("hi")})
	if code != 200 || !strings.Contains(string(body), "\n: ping\n\n") {
		t.Fatalf("%d: no heartbeat in %q", code, body)
	}
	evs := sseEvents(t, body)
	if !strings.Contains(string(evs[len(evs)-1]), `"RUN_FINISHED"`) {
		t.Fatalf("the stream did not finish: %s", evs[len(evs)-1])
	}
}
