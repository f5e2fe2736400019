package fleet_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/redistest"
)

// A client cut mid-stream rejoins the run through the load balancer,
// again and again, landing on other replicas than the one running it
// (GET /api/v1/runs/{id}/events with Last-Event-ID): the ids it gets,
// concatenated, are 1..N, each once, ending with the run's one terminal
// event; and the whole log, read afresh, is the same.
func TestRejoinThroughTheLoadBalancer(t *testing.T) {
	redistest.Fleet(t)
	f := startControlFleet(t)
	req, _ := http.NewRequest("POST", f.URL+"/api/v1/chains/story/run", strings.NewReader(`{"input":"go","stream":true,"runId":"run-rejoined"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, fs := sse(t, req)
	owner := resp.Header.Get("X-Upstream")
	var got []frame
	take := func(fs <-chan frame, n int) bool {
		for range n {
			fr, ok := <-fs
			if !ok {
				return false
			}
			got = append(got, fr)
		}
		return true
	}
	if !take(fs, 5) {
		t.Fatal("the run's stream ended within 5 events")
	}
	resp.Body.Close()
	nextNot(t, f, owner)
	landed := map[string]int{}
	for cut := 0; ; cut++ {
		resp, fs := rejoin(t, f, "run-rejoined", got[len(got)-1].id)
		landed[resp.Header.Get("X-Upstream")]++
		if cut >= 3 {
			got = append(got, drain(t, fs, 30*time.Second)...)
			resp.Body.Close()
			break
		}
		more := take(fs, 5)
		resp.Body.Close()
		if !more || terminalCount(got[len(got)-1:]) == 1 {
			break
		}
	}
	if len(landed) < 2 || landed[owner] == len(landed) {
		t.Errorf("the rejoins landed on %v (the run's replica: %s)", landed, owner)
	}
	checkSequence(t, "the rejoined events", got)
	if n := terminalCount(got); n != 1 || !strings.HasPrefix(got[len(got)-1].data, `{"type":"RUN_FINISHED"`) ||
		strings.Contains(got[len(got)-1].data, `"outcome"`) {
		t.Fatalf("the rejoined run ends with %s (%d terminal events)", got[len(got)-1].data, n)
	}
	resp, fs = rejoin(t, f, "run-rejoined", 0)
	all := drain(t, fs, 10*time.Second)
	resp.Body.Close()
	if len(all) != len(got) {
		t.Fatalf("the log has %d events, the rejoining client got %d", len(all), len(got))
	}
	for i := range all {
		if all[i] != got[i] {
			t.Fatalf("event %d: the log has %s, the client got %s", i+1, all[i].data, got[i].data)
		}
	}
	t.Logf("%d events over rejoins landing on %v", len(got), landed)
}

// A run streaming on one replica is cancelled through the load balancer
// by another one, which lists it as the fleet's (with its replica): one
// answer, 202, and the run's stream ends with RUN_FINISHED outcome
// cancelled, once; a rejoin reads the same end. A run paused for
// approval on one replica and cancelled through another ends its log
// too: a client that rejoins it after the pause gets RUN_FINISHED outcome
// cancelled, at once.
func TestCancelAcrossReplicas(t *testing.T) {
	redistest.Fleet(t)
	f := startControlFleet(t)
	req, _ := http.NewRequest("POST", f.URL+"/api/v1/chains/story/run", strings.NewReader(`{"input":"go","stream":true,"runId":"run-cancelled"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, fs := sse(t, req)
	defer resp.Body.Close()
	owner := resp.Header.Get("X-Upstream")
	var got []frame
	for fr := range fs {
		got = append(got, fr)
		if strings.Contains(fr.data, `"type":"TEXT_MESSAGE_CONTENT"`) {
			break
		}
	}

	nextNot(t, f, owner)
	lr, err := http.Get(f.URL + "/api/v1/runs")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ RunID, Status, Replica string }
	_ = json.NewDecoder(lr.Body).Decode(&list)
	lr.Body.Close()
	if up := lr.Header.Get("X-Upstream"); up == owner {
		t.Fatalf("the listing came from the run's replica %s", up)
	}
	if len(list) != 1 || list[0].RunID != "run-cancelled" || list[0].Status != "running" || list[0].Replica == "" {
		t.Fatalf("another replica lists %+v", list)
	}

	nextNot(t, f, owner)
	code, body, up := post(t, f.URL+"/api/v1/runs/run-cancelled/cancel", nil)
	if up == owner {
		t.Fatalf("the cancel landed on the run's replica %s", up)
	}
	if code != http.StatusAccepted || !strings.Contains(string(body), `"cancelled":true`) {
		t.Fatalf("cancel via %s: %d %s", up, code, body)
	}
	got = append(got, drain(t, fs, 10*time.Second)...)
	checkSequence(t, "the cancelled run's stream", got)
	end := got[len(got)-1].data
	if terminalCount(got) != 1 || !strings.HasPrefix(end, `{"type":"RUN_FINISHED"`) || !strings.Contains(end, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("the cancelled run's stream ends with %s (%d terminal events)", end, terminalCount(got))
	}
	rr, rest := rejoin(t, f, "run-cancelled", got[len(got)-2].id)
	tail := drain(t, rest, 10*time.Second)
	rr.Body.Close()
	if len(tail) != 1 || tail[0] != got[len(got)-1] {
		t.Fatalf("a rejoin before the end reads %+v", tail)
	}

	_, pauser := pause(t, f, "paused-cancelled")
	rr, paused := rejoin(t, f, "paused-cancelled", 0)
	before := drain(t, paused, 10*time.Second)
	rr.Body.Close()
	nextNot(t, f, pauser)
	if code, body, up := post(t, f.URL+"/api/v1/runs/paused-cancelled/cancel", nil); code != http.StatusAccepted || up == pauser {
		t.Fatalf("cancel of the paused run via %s (paused on %s): %d %s", up, pauser, code, body)
	}
	rr, rest = rejoin(t, f, "paused-cancelled", before[len(before)-1].id)
	tail = drain(t, rest, 10*time.Second)
	rr.Body.Close()
	all := append(before, tail...)
	checkSequence(t, "the cancelled paused run's log", all)
	if end := all[len(all)-1].data; terminalCount(tail) != 1 || !strings.Contains(end, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("a rejoin of the cancelled paused run reads %+v", tail)
	}
}
