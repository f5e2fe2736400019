package fleet_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/fleettest"
	"github.com/ruleagent/ruleagent/internal/redistest"
)

// runAnswer is the run and resume routes' JSON answer.
type runAnswer struct {
	RunID, Outcome, Data string
	Interrupts           []struct{ ID string }
}

// pause runs the guarded agent through the load balancer as run id: it
// pauses for the approval of its lookup call. It returns the interrupt's
// id and the replica that paused it.
func pause(t *testing.T, f *fleettest.Fleet, id string) (string, string) {
	t.Helper()
	code, body, up := post(t, f.URL+"/api/v1/chains/guarded/run", map[string]any{"input": "look A-1 up", "runId": id, "stream": false})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
		t.Fatalf("run via %s: %d %s", up, code, body)
	}
	return ans.Interrupts[0].ID, up
}

// approve answers run id's interrupt through the load balancer, on
// another replica than not (any, when not is ""): the run goes on there to
// its end, with what the approved call found.
func approve(t *testing.T, f *fleettest.Fleet, id, interrupt, not string) {
	t.Helper()
	if not != "" {
		nextNot(t, f, not)
	}
	code, body, up := post(t, f.URL+"/api/v1/runs/"+id+"/resume", map[string]any{"stream": false, "resume": []any{map[string]any{
		"interruptId": interrupt, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if not != "" && up == not {
		t.Fatalf("the answer landed on %s, the replica that paused the run", up)
	}
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" || !strings.Contains(ans.Data, "A-1") {
		t.Fatalf("resume via %s: %d %s", up, code, body)
	}
	// The run's log, read through the load balancer: one sequence of ids
	// across the pause, two segments, each with its terminal event.
	resp, fs := rejoin(t, f, id, 0)
	all := drain(t, fs, 10*time.Second)
	resp.Body.Close()
	checkSequence(t, "the approved run's log", all)
	end := all[len(all)-1].data
	if terminalCount(all) != 2 || !strings.HasPrefix(end, `{"type":"RUN_FINISHED"`) || strings.Contains(end, `"outcome"`) {
		t.Fatalf("the approved run's log ends with %s (%d terminal events)", end, terminalCount(all))
	}
}

// A run paused for approval on one replica is answered through another
// and goes on to its end. Then a second one pauses, every replica is
// stopped with SIGTERM (the paused run holds none of them: it is a
// checkpoint in Redis), they start again, list it as waiting, and one
// that did not pause it answers it.
func TestApproveAcrossReplicas(t *testing.T) {
	redistest.Fleet(t)
	f := startControlFleet(t)
	interrupt, pauser := pause(t, f, "run-approved")
	approve(t, f, "run-approved", interrupt, pauser)

	interrupt, pauser = pause(t, f, "run-restarted")
	restartWithPause(t, f, "run-restarted")
	approve(t, f, "run-restarted", interrupt, pauser)
}

// The same on one machine (one replica on its embedded store, DATA/
// state.db): a run paused for approval outlives a SIGTERM and is answered
// after the restart.
func TestApprovalOutlivesARestartOnOneMachine(t *testing.T) {
	redistest.Fleet(t)
	f := startControlFleetWith(t, fleettest.Options{Replicas: 1, NoRedis: true})
	interrupt, _ := pause(t, f, "run-restarted")
	restartWithPause(t, f, "run-restarted")
	approve(t, f, "run-restarted", interrupt, "")
}

// restartWithPause stops every replica with SIGTERM while run id waits
// for approval (it holds none of them), starts them again, and checks
// that the load balancer lists the run as waiting.
func restartWithPause(t *testing.T, f *fleettest.Fleet, id string) {
	t.Helper()
	for _, r := range f.Replicas {
		start := time.Now()
		if !r.Term(15 * time.Second) {
			t.Fatalf("replica %d did not stop within 15s of its SIGTERM", r.Index)
		}
		if err := r.Exit(); err != nil {
			t.Errorf("replica %d: exit after SIGTERM: %v\n%s", r.Index, err, r.Logs())
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("replica %d took %s to stop: the paused run held it", r.Index, took)
		}
	}
	for _, r := range f.Replicas {
		r.Start(t)
	}
	ready(t, f)
	lr, err := http.Get(f.URL + "/api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ RunID, Status string }
	_ = json.NewDecoder(lr.Body).Decode(&list)
	lr.Body.Close()
	if len(list) != 1 || list[0].RunID != id || list[0].Status != "waiting" {
		t.Fatalf("after the restart, %s lists %+v", lr.Header.Get("X-Upstream"), list)
	}
}
