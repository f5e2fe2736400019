package server

import (
	"encoding/json"
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
