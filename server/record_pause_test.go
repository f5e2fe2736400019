package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/state/runrecord"
)

// TestPausedRunsRecordGoesOnInTheNextProcess: a run that pauses is a
// checkpoint, and so is its record: the process that paused it stops, the
// next one on the same files answers it, and the run's record (read back
// from the store by the run's id) and event log go on there. The record
// holds both processes' LLM calls and the answer, and replays to the
// events the client saw across the two.
func TestPausedRunsRecordGoesOnInTheNextProcess(t *testing.T) {
	t.Run("the recording's event log", func(t *testing.T) { pausedRecordGoesOn(t, newRecEnv(t)) })
	// As serve keeps them: the runs' events in the store's run log, each
	// record keeping its own.
	t.Run("the run log", func(t *testing.T) {
		pausedRecordGoesOn(t, newRecEnv(t, func(so *StoreOptions, _ *Options) {
			if so != nil {
				so.RunLog = RunLog{Events: so.Recording.Events, Replica: so.Recording.Replica}
				so.Recording.Events = nil
			}
		}))
	})
}

func pausedRecordGoesOn(t *testing.T, e *recEnv) {
	runID, interrupt, evs := e.startMixed()
	before := e.llmCalls()
	e.restart("next")
	evs = append(evs, e.approve(runID, interrupt)...)
	if !strings.Contains(string(evs[len(evs)-1]), `"type":"RUN_FINISHED"`) || strings.Contains(string(evs[len(evs)-1]), "interrupt") {
		t.Fatalf("the resumed run did not finish: %s", evs[len(evs)-1])
	}
	var rec struct {
		Meta struct {
			Outcome    string `json:"outcome"`
			LLMCalls   int    `json:"llmCalls"`
			Replayable bool   `json:"replayable"`
		} `json:"meta"`
		Resumes []struct {
			Interrupts []string        `json:"interrupts"`
			Entries    json.RawMessage `json:"entries"`
		} `json:"resumes"`
		Events []json.RawMessage `json:"events"`
	}
	var body []byte
	deadline := time.Now().Add(5 * time.Second)
	for {
		var code int
		code, body, _ = e.do("GET", "/api/v1/runs/"+runID+"/record", nil)
		if code != http.StatusOK {
			t.Fatalf("record: %d %s", code, body)
		}
		if err := json.Unmarshal(body, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Meta.Outcome == OutcomeSuccess && len(rec.Events) == len(evs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rec.Meta.Outcome != OutcomeSuccess || !rec.Meta.Replayable || rec.Meta.LLMCalls != e.llmCalls() || e.llmCalls() <= before {
		t.Fatalf("the record does not hold the whole run (%d LLM calls, %d before the pause): %s", e.llmCalls(), before, body)
	}
	if len(rec.Resumes) != 1 || len(rec.Resumes[0].Interrupts) != 1 || rec.Resumes[0].Interrupts[0] != interrupt ||
		!bytes.Contains(rec.Resumes[0].Entries, []byte(interrupt)) {
		t.Fatalf("the record does not keep the answer: %s", body)
	}
	if len(rec.Events) != len(evs) {
		t.Fatalf("the event log kept %d events of the %d the client saw", len(rec.Events), len(evs))
	}
	got, err := e.store.GetRecord(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.store.Replay(context.Background(), got, evs, ReplayOptions{})
	if err != nil || !rep.Same {
		t.Fatalf("the replay is not the run: %+v %v", rep, err)
	}
}

// TestReplayOfARunWhosePauseExpired: nobody answered the run's approval in
// time, so it went on without a client (a denial), its events kept for
// no one. The record says the interrupt expired, and the replay answers
// its pause the same way, without a client either: the same events.
func TestReplayOfARunWhosePauseExpired(t *testing.T) {
	e := newRecEnv(t)
	dsl := recChains(e.backup.URL)["mixed"]
	short := strings.Replace(strings.Replace(dsl, `"timeout":"30s"`, `"timeout":"1s"`, 1), `"timeout": "30s"`, `"timeout": "1s"`, 1)
	if short == dsl {
		t.Fatal("the mixed chain has no 30s approval timeout")
	}
	if _, err := e.store.Deploy([]byte(short), "mixed"); err != nil {
		t.Fatal(err)
	}
	runID, interrupt, evs := e.startMixed()
	var got *runrecord.Record
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec, err := e.store.GetRecord(context.Background(), runID)
		if err == nil && rec.Meta.Outcome == OutcomeSuccess {
			got = rec
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not go on after its interrupt expired: %+v %v", rec, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got.Resumes) != 1 || len(got.Resumes[0].Expired) != 1 || got.Resumes[0].Expired[0] != interrupt {
		t.Fatalf("the record does not say the interrupt expired: %+v", got.Resumes)
	}
	rep, err := e.store.Replay(context.Background(), got, evs, ReplayOptions{})
	if err != nil || !rep.Same || rep.Outcome != OutcomeSuccess {
		t.Fatalf("the replay is not the run: %+v %+v %+v", rep, rep.Divergence, rep.Difference)
	}
}

// TestAForksPauseGoesOnOnlyWhereItRuns: a fork runs the recorded chains
// with its playback and its own model, which live in the process that
// runs it; the next process on the same files refuses to answer its
// pause (409) rather than go on with the deployed chain in their place.
func TestAForksPauseGoesOnOnlyWhereItRuns(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/fork", map[string]any{"step": 2})
	var ans struct {
		RunID      string                `json:"runId"`
		Outcome    string                `json:"outcome"`
		Interrupts []struct{ ID string } `json:"interrupts"`
	}
	_ = json.Unmarshal(body, &ans)
	if code != http.StatusOK || ans.Outcome != OutcomeInterrupt || len(ans.Interrupts) != 1 {
		t.Fatalf("the fork did not pause: %d %s", code, body)
	}
	before := e.llmCalls()
	e.restart("next")
	code, body, _ = e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{
		"resume": []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != http.StatusConflict || !strings.Contains(string(body), "only the process that runs it") {
		t.Fatalf("the next process answered the fork's pause: %d %s", code, body)
	}
	if e.llmCalls() != before {
		t.Fatal("the refused answer called the LLM")
	}
}
