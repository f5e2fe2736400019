package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pauseAndResume runs the guarded agent on run route of a (it pauses for
// approval), checks that its log, rejoined meanwhile, ends at the pause,
// answers it on b, and returns the whole log read on a.
func pauseAndResume(t *testing.T, a, b *apiEnv, runID string, between ...func()) []sseFrame {
	t.Helper()
	code, body, _ := a.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": runID})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
		t.Fatalf("run: %d %s", code, body)
	}
	paused := b.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events", "").wait(t)
	if len(paused) == 0 || !strings.Contains(paused[len(paused)-1].data, `"outcome":{"type":"interrupt"`) {
		t.Fatalf("the paused run's log: %+v", paused)
	}
	for _, f := range between {
		f()
	}
	code, body, _ = b.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": []any{map[string]any{
		"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" {
		t.Fatalf("resume: %d %s", code, body)
	}
	all := b.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events?after=0", "").wait(t)
	checkIDs(t, "the resumed run's log", all, 0)
	sameData(t, "the log's first segment", all[:len(paused)], paused)
	if terminals(all) != 2 || !strings.HasPrefix(all[len(paused)].data, `{"type":"RUN_STARTED"`) ||
		!strings.Contains(all[len(all)-1].data, `"type":"RUN_FINISHED"`) || !strings.Contains(all[len(all)-1].data, `found`) {
		t.Fatalf("the resumed run's log: %+v", all[len(paused):])
	}
	return all
}

// A run that pauses for approval keeps one log: a rejoin while it waits
// ends at the pause; once answered, the log goes on (ids after the
// pause's) to the run's end.
func TestRunEventsAcrossAPause(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	pauseAndResume(t, e, e, "run-paused")
}

// Paused on replica A, answered on B: B goes on with the run and its log.
func TestFleetRunEventsAcrossAPause(t *testing.T) {
	fl := redisFleet(t, 2)
	pauseAndResume(t, fl[0].apiEnv, fl[1].apiEnv, "fleet-paused")
}

// A paused run is a checkpoint, not its replica's: the replica that paused
// it dies, and no janitor ends it (replica_lost); B answers it and its log
// goes on to its end.
func TestFleetPausedRunOutlivesItsReplica(t *testing.T) {
	fl := redisFleet(t, 2)
	pauseAndResume(t, fl[0].apiEnv, fl[1].apiEnv, "orphan-paused", func() {
		fl[0].kill()
		time.Sleep(500 * time.Millisecond) // five janitor rounds on B
	})
}

// cancelPausedAndRejoin pauses the guarded agent on a, cancels the paused
// run on b, and rejoins it on b after the pause's last event: the rejoin
// ends at once with one terminal RUN_FINISHED, outcome cancelled, in a
// segment of its own (RUN_STARTED first), the ids going on from the
// pause's.
func cancelPausedAndRejoin(t *testing.T, a, b *apiEnv, runID string) {
	t.Helper()
	code, body, _ := a.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": runID})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	paused := a.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events", "").wait(t)
	last := paused[len(paused)-1].id
	if code, body, _ := b.do("POST", "/api/v1/runs/"+runID+"/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	rest := b.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events", "", "Last-Event-ID", strconv.FormatUint(last, 10)).wait(t)
	checkIDs(t, "the cancelled run's rejoined tail", rest, last)
	if len(rest) != 2 || !strings.HasPrefix(rest[0].data, `{"type":"RUN_STARTED"`) ||
		!strings.HasPrefix(rest[1].data, `{"type":"RUN_FINISHED"`) || !strings.Contains(rest[1].data, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("the cancelled paused run's rejoined tail: %+v", rest)
	}
	all := a.openSSE(t.Context(), "GET", "/api/v1/runs/"+runID+"/events?after=0", "").wait(t)
	checkIDs(t, "the cancelled run's log", all, 0)
	if terminals(all) != 2 {
		t.Fatalf("the cancelled run's log has %d terminal events: %+v", terminals(all), all)
	}
}

// A paused run that is cancelled ends its log with RUN_FINISHED, outcome
// cancelled: a client rejoining it gets its end instead of waiting for
// the log's 24 h bound.
func TestCancelledPausedRunEndsItsLog(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	cancelPausedAndRejoin(t, e, e, "paused-cancelled")
}

// Paused on replica A, cancelled on B: B ends the run's log.
func TestFleetCancelledPausedRunEndsItsLog(t *testing.T) {
	fl := redisFleet(t, 2)
	cancelPausedAndRejoin(t, fl[0].apiEnv, fl[1].apiEnv, "fleet-paused-cancelled")
}
