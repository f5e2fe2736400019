package server

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/state/checkpoint"
)

// answerAtOnce pauses the guarded agent on a and answers it on b as soon
// as a has answered the run's request (well within a's flush interval):
// the run's log, read from the start, has every id from 1 exactly once,
// in order, the pause's segment then the resumed one, one terminal each.
func answerAtOnce(t *testing.T, a, b *apiEnv, runID string) {
	t.Helper()
	code, body, _ := a.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": runID})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
		t.Fatalf("run: %d %s", code, body)
	}
	code, body, _ = b.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": []any{map[string]any{
		"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" {
		t.Fatalf("resume: %d %s", code, body)
	}
	for _, e := range []*apiEnv{a, b} {
		all := e.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events?after=0", "").wait(t)
		checkIDs(t, "the run's log", all, 0)
		paused := -1
		for i, f := range all {
			if pausedEnd([]byte(f.data)) {
				paused = i
			}
		}
		if terminals(all) != 2 || paused < 0 || paused+1 >= len(all) || !strings.HasPrefix(all[paused+1].data, `{"type":"RUN_STARTED"`) ||
			!strings.HasPrefix(all[len(all)-1].data, `{"type":"RUN_FINISHED"`) || !strings.Contains(all[len(all)-1].data, "found") {
			t.Fatalf("the run's log: %+v", all)
		}
	}
}

// Two stores sharing their checkpoints and their (embedded) event log: a
// run paused on A and answered on B at once keeps one log, ids 1..N once
// each in order, though A's last events were still waiting for its
// flusher when B took the run (a flush interval of a second here).
func TestPauseAnsweredAtOnceElsewhereKeepsItsIDs(t *testing.T) {
	_, lg := boltRunLogFlushing(t, stateFile(t), time.Second)
	cps := checkpoint.NewMemory(nil)
	both := func(_ context.Context, id string) (bool, error) { return id == "a" || id == "b", nil }
	a := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, Replica: "a", RunLog: RunLog{Events: lg, Replica: "a", Alive: both}})
	b := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, Replica: "b", RunLog: RunLog{Events: lg, Replica: "b", Alive: both}})
	answerAtOnce(t, a, b, "handed-over")
}

// The same in a fleet on Redis: replica A flushes its log every second.
func TestFleetPauseAnsweredAtOnceElsewhereKeepsItsIDs(t *testing.T) {
	fl := redisFleetFlushing(t, []time.Duration{time.Second, 0})
	answerAtOnce(t, fl[0].apiEnv, fl[1].apiEnv, "fleet-handed-over")
}

// A run paused here and answered elsewhere, cancelled elsewhere, or whose
// interrupt expired leaves nothing of its log in the process that paused
// it, nor in the one that went on with it: no writer (its log is taken
// over by whoever goes on), no entry in the runs with a log.
func TestPausedRunsLeaveNothingBehind(t *testing.T) {
	_, lg := boltRunLogFlushing(t, stateFile(t), time.Second)
	cps := checkpoint.NewMemory(nil)
	both := func(_ context.Context, id string) (bool, error) { return id == "a" || id == "b", nil }
	a := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, Replica: "a", RunLog: RunLog{Events: lg, Replica: "a", Alive: both}})
	b := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, Replica: "b", RunLog: RunLog{Events: lg, Replica: "b", Alive: both}})
	deployHasty(t, a)
	answerAtOnce(t, a, b, "answered-elsewhere")
	pause := func(chain, runID string) {
		code, body, _ := a.do("POST", "/api/v1/chains/"+chain+"/run", map[string]any{"input": "lookup it", "runId": runID})
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
			t.Fatalf("run: %d %s", code, body)
		}
	}
	pause("guarded", "cancelled-elsewhere")
	if code, body, _ := b.do("POST", "/api/v1/runs/cancelled-elsewhere/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	pause("hasty", "expired-here")
	ended := func(id string) bool {
		m, err := lg.Meta(t.Context(), id)
		return err == nil && m.Ended()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ended("expired-here") || !ended("cancelled-elsewhere") {
		if time.Now().After(deadline) {
			t.Fatal("the runs did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, e := range []*apiEnv{a, b} {
		rl := e.store.rl
		rl.mu.Lock()
		n := len(rl.runs)
		rl.mu.Unlock()
		if n != 0 {
			t.Fatalf("the process keeps %d runs with a log", n)
		}
	}
	for _, id := range []string{"answered-elsewhere", "cancelled-elsewhere", "expired-here"} {
		all := b.openSSE(t.Context(), "GET", "/api/v1/runs/"+id+"/events?after=0", "").wait(t)
		checkIDs(t, id, all, 0)
	}
}

// failingRelease is a checkpoint store whose first Release fails, as a
// store that does not answer for a moment.
type failingRelease struct {
	*checkpoint.Memory
	failed atomic.Bool
}

func (f *failingRelease) Release(ctx context.Context, runID string, fence uint64) error {
	if f.failed.CompareAndSwap(false, true) {
		return errors.New("the checkpoint store does not answer")
	}
	return f.Memory.Release(ctx, runID, fence)
}

// A pause whose checkpoint could not be handed to the fleet (the store
// did not answer) is handed over by the janitor once it answers: the run
// can be answered, and its log goes on.
func TestPauseHandedOverOnceTheStoreAnswers(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	cps := &failingRelease{Memory: checkpoint.NewMemory(nil)}
	e := newAPIEnvWith(t, Options{}, StoreOptions{Checkpoints: cps, RunLog: rl})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "late-release"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || !cps.failed.Load() {
		t.Fatalf("run: %d %s", code, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body, _ = e.do("POST", "/api/v1/runs/late-release/resume", map[string]any{"resume": []any{map[string]any{
			"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
		if code == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code != 200 || !strings.Contains(string(body), `"outcome":"success"`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	all := e.openSSE(t.Context(), "GET", "/api/v1/runs/late-release/events?after=0", "").wait(t)
	checkIDs(t, "the run's log", all, 0)
	if terminals(all) != 2 {
		t.Fatalf("the run's log: %+v", all)
	}
}

// deployHasty deploys hasty, the guarded agent whose approvals expire
// after 300 ms.
func deployHasty(t *testing.T, e *apiEnv) {
	t.Helper()
	var guarded map[string]any
	_ = json.Unmarshal([]byte(testChains()["guarded"]), &guarded)
	cfg := guarded["metadata"].(map[string]any)["nodes"].([]any)[0].(map[string]any)["configuration"].(map[string]any)
	cfg["approval"].(map[string]any)["timeout"] = "300ms"
	guarded["ruleChain"].(map[string]any)["id"] = "hasty"
	if code, body, _ := e.do("PUT", "/api/v1/chains/hasty", guarded); code/100 != 2 {
		t.Fatalf("deploy: %d %s", code, body)
	}
}
