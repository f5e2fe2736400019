package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// recordedEvents are run runID's events as its record keeps them: in the
// recording's event log when it has one, else in the record itself. It
// waits until the run has ended.
func recordedEvents(t *testing.T, e *apiEnv, lg eventlog.Log, runID string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var rec *runrecord.Record
	for {
		var err error
		rec, err = e.store.GetRecord(t.Context(), runID)
		if err == nil && rec.Meta.Outcome != "" && rec.Meta.Outcome != OutcomeInterrupt {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s's record did not end: %v %+v", runID, err, rec)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var out []string
	if lg == nil {
		for _, ev := range rec.Events {
			out = append(out, string(ev))
		}
		return out
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	for ev, err := range lg.Follow(ctx, runID, 0) {
		if err != nil {
			t.Fatalf("run %s's log: %v (so far %q)", runID, err, out)
		}
		out = append(out, string(ev.Data))
	}
	return out
}

// endsOnce checks that a run's events end with its one terminal event
// (segments that ended on interrupts aside), of outcome want.
func endsOnce(t *testing.T, what string, evs []string, want string) {
	t.Helper()
	n := 0
	for _, ev := range evs {
		if terminal([]byte(ev)) && !pausedEnd([]byte(ev)) {
			n++
		}
	}
	if n != 1 || len(evs) == 0 || !terminal([]byte(evs[len(evs)-1])) || !strings.Contains(evs[len(evs)-1], want) {
		t.Fatalf("%s: %d terminal events, want one, last: %q", what, n, evs)
	}
}

// Every recorded run ends with exactly one terminal event, however the
// store keeps its events (the recording's own event log, the record
// itself, or the run log beside the record) and however it ends: by
// itself, cancelled while paused, or going on after its interrupts
// expired with no client.
func TestEveryRecordedRunEndsWithOneTerminal(t *testing.T) {
	for _, c := range []string{"recording log", "record", "run log"} {
		t.Run(c, func(t *testing.T) {
			records := runrecord.NewMemory(runrecord.Options{})
			so := StoreOptions{Recording: Recording{Records: records}}
			var lg eventlog.Log
			switch c {
			case "recording log":
				_, lg = boltRunLog(t, stateFile(t))
				so.Recording.Events = lg
			case "run log":
				so.RunLog, _ = boltRunLog(t, stateFile(t))
			}
			e := newAPIEnvWith(t, Options{}, so)
			deployHasty(t, e)
			pause := func(chain, runID string) {
				code, body, _ := e.do("POST", "/api/v1/chains/"+chain+"/run", map[string]any{"input": "lookup it", "runId": runID})
				var ans runAnswer
				if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
					t.Fatalf("run: %d %s", code, body)
				}
			}
			if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hi", "runId": "plain"}); code != 200 {
				t.Fatalf("run: %d %s", code, body)
			}
			endsOnce(t, "a run that ended by itself", recordedEvents(t, e, lg, "plain"), `"type":"RUN_FINISHED"`)
			pause("guarded", "cancelled")
			if code, body, _ := e.do("POST", "/api/v1/runs/cancelled/cancel", nil); code != 202 {
				t.Fatalf("cancel: %d %s", code, body)
			}
			endsOnce(t, "a paused run cancelled", recordedEvents(t, e, lg, "cancelled"), `"outcome":{"type":"cancelled"}`)
			pause("hasty", "expired")
			endsOnce(t, "a paused run whose interrupt expired", recordedEvents(t, e, lg, "expired"), `"type":"RUN_FINISHED"`)
		})
	}
}

// Two stores recording runs into one event log (a Go host's
// Recording.Events, no run log): a run paused on A and answered on B, and
// one paused on A and cancelled on B, keep one log each, ids 1..N once
// each in order, ending with one terminal event; A keeps no writer of
// them (B continues their logs).
func TestRecordedPauseAnsweredElsewhereKeepsOneLog(t *testing.T) {
	_, lg := boltRunLog(t, stateFile(t))
	cps := checkpoint.NewMemory(nil)
	records := runrecord.NewMemory(runrecord.Options{})
	open := func(replica string) *apiEnv {
		return newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, Replica: replica,
			Recording: Recording{Records: records, Events: lg, Replica: replica}})
	}
	a, b := open("a"), open("b")
	for _, c := range []struct{ runID, verb, want string }{{"answered-on-b", "resume", `"type":"RUN_FINISHED"`},
		{"cancelled-on-b", "cancel", `"outcome":{"type":"cancelled"}`}} {
		code, body, _ := a.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": c.runID})
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
			t.Fatalf("run: %d %s", code, body)
		}
		var req any
		if c.verb == "resume" {
			req = map[string]any{"resume": []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved",
				"payload": map[string]any{"approved": true}}}}
		}
		if code, body, _ := b.do("POST", "/api/v1/runs/"+c.runID+"/"+c.verb, req); code/100 != 2 {
			t.Fatalf("%s: %d %s", c.verb, code, body)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		var ids []uint64
		var evs []string
		for e, err := range lg.Follow(ctx, c.runID, 0) {
			if err != nil {
				t.Fatalf("%s's log: %v (so far %q)", c.runID, err, evs)
			}
			ids = append(ids, e.ID)
			evs = append(evs, string(e.Data))
		}
		cancel()
		for i, id := range ids {
			if id != uint64(i)+1 {
				t.Fatalf("%s's log: event %d has id %d: %v", c.runID, i, id, ids)
			}
		}
		endsOnce(t, c.runID, evs, c.want)
	}
}

// A run whose client went away goes on for the client to rejoin, and is
// recorded to its end: its record's events end with its terminal event.
func TestRunWhoseClientLeftIsRecordedToItsEnd(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl, Recording: Recording{Records: runrecord.NewMemory(runrecord.Options{})}})
	gate := make(chan struct{})
	held := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "first then the rest", ChunkSize: 6, Hold: gate, HoldAfter: 2}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/held", chainDSL("held", "Held", nil, agentNode(promptChat, map[string]any{"url": held.URL}))); code/100 != 2 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	ctx, leave := context.WithCancel(t.Context())
	s := e.openSSE(ctx, "POST", "/api/v1/chains/held/run", `{"input": "go", "stream": true, "runId": "left"}`)
	s.until(t, "TEXT_MESSAGE_CONTENT")
	leave()
	time.Sleep(100 * time.Millisecond)
	close(gate)
	endsOnce(t, "the run whose client left", recordedEvents(t, e, nil, "left"), `"type":"RUN_FINISHED"`)
}

// A run recorded into a Go host's event log (no run log) whose interrupt
// expires goes on with no client and pauses again: that pause, which no
// client hears, is handed over all the same, so its expiry goes on with
// the run to its end.
func TestRecordedRunPausingAgainWithNoClientEnds(t *testing.T) {
	_, lg := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{Recording: Recording{Records: runrecord.NewMemory(runrecord.Options{}), Events: lg}})
	llm := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if n := len(r.ToolResults()); n < 2 {
			return llmtest.Calls(llmtest.Call("lookup", `{"key":"K-`+strconvU(uint64(n))+`"}`))
		}
		return llmtest.Reply("done")
	}))
	dsl := chainDSL("twice", "Twice", nil, agentNode(promptGuard, map[string]any{"url": llm.URL,
		"approval": map[string]any{"tools": []any{"lookup"}, "timeout": "300ms"},
		"tools": []any{map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/twice", dsl); code/100 != 2 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	code, body, _ := e.do("POST", "/api/v1/chains/twice/run", map[string]any{"input": "go", "runId": "twice"})
	if code != 200 || !strings.Contains(string(body), `"outcome":"interrupt"`) {
		t.Fatalf("run: %d %s", code, body)
	}
	evs := recordedEvents(t, e, lg, "twice")
	endsOnce(t, "the run that paused again with no client", evs, `"type":"RUN_FINISHED"`)
}
