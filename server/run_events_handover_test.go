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

// A run whose replica died before its last events reached the log ends
// with a RUN_ERROR replica_lost whose id in the log may be at or below ids
// the dead replica gave its client. Rejoining clients get it exactly once:
// its SSE id is above every id of the run, and a client that has it (a
// follower, or one that rejoined after ids the log never kept) gets 204
// when it reconnects with it, not the terminal again.
func TestFleetReplicaLostTerminalIsSentOnce(t *testing.T) {
	fl := redisFleetFlushing(t, []time.Duration{time.Hour, 0})
	a, b := fl[0], fl[1]
	ctx := t.Context()
	onA := a.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"lost-once"}`)
	onA.until(t, "TEXT_MESSAGE_CONTENT")
	last := onA.until(t, "TEXT_MESSAGE_CONTENT")
	onB := b.openSSE(ctx, "GET", "/api/v1/runs/lost-once/events", "") // follows what the log has: nothing yet
	a.die()
	followed := onB.wait(t)
	rejoined := b.openSSE(ctx, "GET", "/api/v1/runs/lost-once/events", "", "Last-Event-ID", strconvU(last)).wait(t)
	for what, fs := range map[string][]sseFrame{"the follower": followed, "the client of the dead replica": rejoined} {
		if len(fs) == 0 || !lostTerminal([]byte(fs[len(fs)-1].data)) {
			t.Fatalf("%s's stream: %+v", what, fs)
		}
		end := fs[len(fs)-1].id
		if end <= last {
			t.Fatalf("%s got the lost terminal with id %d, at or below the %d the dead replica gave", what, end, last)
		}
		code, body, _ := b.do("GET", "/api/v1/runs/lost-once/events", nil, "Last-Event-ID", strconvU(end))
		if code != 204 {
			t.Fatalf("%s reconnecting with the terminal's id %d: %d %s", what, end, code, body)
		}
	}
}
