package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// sameData checks that two streams carry the same events, ids included.
func sameData(t *testing.T, what string, got, want []sseFrame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

// A run's streamed events carry SSE ids 1, 2, 3 ...; a client that
// rejoins with Last-Event-ID (or ?after=) gets exactly the events it
// missed, then the live ones, and its stream ends after the terminal
// event; a finished run is read again whole.
func TestRunEventsRejoin(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	ctx := t.Context()
	first := e.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"run-rejoin"}`)
	first.until(t, "TEXT_MESSAGE_CONTENT")
	at := first.until(t, "TEXT_MESSAGE_CONTENT")
	if at == 0 {
		t.Fatal("the run's frames carry no id")
	}
	rejoined := e.openSSE(ctx, "GET", "/api/v1/runs/run-rejoin/events", "", "Last-Event-ID", strconvU(at))
	all := first.wait(t)
	tail := rejoined.wait(t)
	checkIDs(t, "the run's stream", all, 0)
	if terminals(all) != 1 || !strings.HasPrefix(all[len(all)-1].data, `{"type":"RUN_FINISHED"`) {
		t.Fatalf("the run's stream ends with %s", all[len(all)-1].data)
	}
	if rejoined.resp.StatusCode != 200 || rejoined.resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("rejoin: %d %v", rejoined.resp.StatusCode, rejoined.resp.Header)
	}
	sameData(t, "rejoined after "+strconvU(at), tail, all[at:])

	// The finished run, again, whole (?after=0), and from the middle.
	again := e.openSSE(ctx, "GET", "/api/v1/runs/run-rejoin/events?after=0", "").wait(t)
	sameData(t, "the finished run", again, all)
	var datas [][]byte
	for _, f := range again {
		datas = append(datas, []byte(f.data))
	}
	for _, v := range aguicheck.Check(datas) {
		t.Errorf("AG-UI violation in the replayed run: %v", v)
	}
	sameData(t, "the finished run after 5", e.openSSE(ctx, "GET", "/api/v1/runs/run-rejoin/events?after=5", "").wait(t), all[5:])
	// A client that has the whole run gets nothing more (its terminal
	// event is not sent twice): 204, which stops an EventSource.
	for _, hdr := range [][]string{{"Last-Event-ID", strconvU(all[len(all)-1].id)}, {"Last-Event-ID", "1000"}} {
		if code, body, _ := e.do("GET", "/api/v1/runs/run-rejoin/events", nil, hdr...); code != 204 || len(body) != 0 {
			t.Errorf("after %s: %d %s", hdr[1], code, body)
		}
	}

	// The AG-UI route's frames carry ids too.
	ag := e.openSSE(ctx, "POST", "/api/v1/chains/chat/agui", `{"threadId":"t-ag","runId":"run-ag","messages":[{"id":"u1","role":"user","content":"hi"}]}`).wait(t)
	checkIDs(t, "the AG-UI stream", ag, 0)

	// Refusals.
	for _, tc := range []struct {
		path string
		hdr  []string
		code int
	}{
		{"/api/v1/runs/no-such-run/events", nil, 404},
		{"/api/v1/runs/run-rejoin/events", []string{"Last-Event-ID", "x"}, 400},
		{"/api/v1/runs/run-rejoin/events?after=-1", nil, 400},
	} {
		if code, body, _ := e.do("GET", tc.path, nil, tc.hdr...); code != tc.code || !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s %v: %d %s", tc.path, tc.hdr, code, body)
		}
	}
}

func strconvU(n uint64) string { b, _ := json.Marshal(n); return string(b) }

// A client of the run route that goes away does not end its run at once:
// it reconnects (its request again, with Last-Event-ID) and gets the rest,
// no event lost or repeated. A run that nobody rejoins within the rejoin
// grace is cancelled.
func TestRunRouteReconnects(t *testing.T) {
	rl, lg := boltRunLog(t, stateFile(t))
	rl.RejoinGrace = 500 * time.Millisecond
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	body := `{"input":"go","stream":true,"runId":"run-back"}`
	ctx, cancel := context.WithCancel(t.Context())
	first := e.openSSE(ctx, "POST", "/api/v1/chains/slow/run", body)
	first.until(t, "TEXT_MESSAGE_CONTENT")
	cancel()
	got := first.wait(t)
	last := got[len(got)-1].id
	time.Sleep(200 * time.Millisecond)
	back := e.openSSE(t.Context(), "POST", "/api/v1/chains/slow/run", body, "Last-Event-ID", strconvU(last)).wait(t)
	all := e.openSSE(t.Context(), "GET", "/api/v1/runs/run-back/events", "").wait(t)
	if len(back) == 0 || terminals(back) != 1 || !strings.Contains(back[len(back)-1].data, `"type":"RUN_FINISHED"`) ||
		strings.Contains(back[len(back)-1].data, "cancelled") {
		t.Fatalf("the rejoined run ends with %+v", back)
	}
	sameData(t, "what the client got", append(got, back...), all)

	// Nobody comes back: the run is cancelled after the grace.
	ctx, cancel = context.WithCancel(t.Context())
	gone := e.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"run-left"}`)
	gone.until(t, "TEXT_MESSAGE_CONTENT")
	cancel()
	gone.wait(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := lg.Meta(t.Context(), "run-left")
		if err == nil && m.Ended() {
			if m.Status != OutcomeCancelled {
				t.Fatalf("the abandoned run ended %q", m.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned run did not end: %+v %v", m, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	left := e.openSSE(t.Context(), "GET", "/api/v1/runs/run-left/events", "").wait(t)
	if terminals(left) != 1 || !strings.Contains(left[len(left)-1].data, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("the abandoned run's log ends with %s", left[len(left)-1].data)
	}
}

// A verified user rejoins only their own runs: another user's is 404, as
// an unknown run (and as for cancel); the operator may rejoin any.
func TestRunEventsIdentity(t *testing.T) {
	keys := sessions.NewMemory()
	v, err := identity.New(identity.Config{Methods: []string{identity.MethodKey}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{Token: opToken, Identity: v, Keys: keys}, StoreOptions{RunLog: rl})
	key := map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		k, rec, err := identity.NewKey(u, "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := keys.PutKey(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
		key[u] = k
	}
	if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hi", "runId": "alice-run"}, "Authorization", "Bearer "+key["alice"]); code != 200 {
		t.Fatalf("alice's run: %d %s", code, body)
	}
	for _, tc := range []struct {
		who  string
		code int
	}{{key["bob"], 404}, {key["alice"], 200}, {opToken, 200}} {
		code, body, _ := e.do("GET", "/api/v1/runs/alice-run/events", nil, "Authorization", "Bearer "+tc.who)
		if code != tc.code || (code == 200 && !strings.Contains(string(body), `"type":"RUN_FINISHED"`)) {
			t.Errorf("rejoin as %.8s: %d %s, want %d", tc.who, code, body, tc.code)
		}
	}
	// Reposting bob's request under alice's run id does not show bob her
	// run: the id is taken (as by a run of his own whose events are gone).
	code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "hi", "runId": "alice-run", "stream": true},
		"Authorization", "Bearer "+key["bob"], "Last-Event-ID", "0")
	if code != 200 || strings.Contains(string(body), "RUN_STARTED") || !strings.Contains(string(body), `"code":"run_not_started"`) {
		t.Errorf("bob reposting alice's run id: %d %s", code, body)
	}
}

// On one machine, the runs an earlier process left unfinished (killed
// mid-run) end at start with one terminal RUN_ERROR, code replica_lost,
// which a client rejoining them reads.
func TestRestartEndsTheEarlierProcessRuns(t *testing.T) {
	path := stateFile(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	earlier, err := eventlog.NewBolt(db, eventlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := earlier.Start(t.Context(), eventlog.Meta{RunID: "run-killed", Owner: "earlier-process", ChainID: "slow", StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	start := events.Event{Type: events.RunStarted, ThreadID: "t", RunID: "run-killed"}
	w.Append(start.AppendJSON(nil))
	// The process dies: what it flushed is on disk, its run never ends.
	_ = earlier.Close()
	_ = db.Close()
	rl, lg := boltRunLog(t, path)
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	got := e.openSSE(t.Context(), "GET", "/api/v1/runs/run-killed/events", "").wait(t)
	if len(got) != 2 || terminals(got) != 1 || !strings.Contains(got[1].data, `"type":"RUN_ERROR"`) ||
		!strings.Contains(got[1].data, `"code":"replica_lost"`) {
		t.Fatalf("the killed run's log: %+v", got)
	}
	checkIDs(t, "the killed run", got[:1], 0)
	if got[1].id != lostIDBase+2 {
		t.Fatalf("the killed run's end has id %d, want %d (its log id 2, above every id of a run)", got[1].id, lostIDBase+2)
	}
	if m, err := lg.Meta(t.Context(), "run-killed"); err != nil || m.Status != OutcomeError {
		t.Fatalf("meta %+v %v", m, err)
	}
}

// Two replicas on one Redis: a run on A is rejoined on B with no event
// lost or repeated, listed on B with its replica, and cancelled through B
// (the answer is A's); a run nobody runs is 404.
func TestFleetRejoinListCancel(t *testing.T) {
	fl := redisFleet(t, 2)
	a, b := fl[0], fl[1]
	ctx := t.Context()
	onA := a.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"fleet-run"}`)
	at := onA.until(t, "TEXT_MESSAGE_CONTENT")
	onB := b.openSSE(ctx, "GET", "/api/v1/runs/fleet-run/events", "", "Last-Event-ID", strconvU(at))
	onB.until(t, "TEXT_MESSAGE_CONTENT")

	code, body, _ := b.do("GET", "/api/v1/runs", nil)
	var list []runs.Info
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list) != 1 || list[0].RunID != "fleet-run" ||
		list[0].Replica != a.id || list[0].ChainID != "slow" || list[0].Step != 1 {
		t.Fatalf("B's runs listing: %d %s", code, body)
	}
	code, body, _ = b.do("POST", "/api/v1/runs/fleet-run/cancel", nil)
	if code != 202 || !strings.Contains(string(body), `"replica":"`+a.id+`"`) {
		t.Fatalf("cancel through B: %d %s", code, body)
	}
	all := onA.wait(t)
	tail := onB.wait(t)
	if terminals(all) != 1 || !strings.Contains(all[len(all)-1].data, `"outcome":{"type":"cancelled"}`) {
		t.Fatalf("A's stream ends with %s", all[len(all)-1].data)
	}
	checkIDs(t, "A's stream", all, 0)
	sameData(t, "B's rejoined stream", tail, all[at:])
	for _, id := range []string{"fleet-run", "no-such-run"} {
		if code, body, _ := b.do("POST", "/api/v1/runs/"+id+"/cancel", nil); code != 404 {
			t.Errorf("cancel %s through B: %d %s", id, code, body)
		}
	}
	if code, body, _ := b.do("GET", "/api/v1/runs", nil); code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("B's runs listing after the end: %d %s", code, body)
	}
}

// A replica killed mid-run: a janitor on a live replica ends its run with
// one terminal RUN_ERROR, code replica_lost, which a client following the
// run on another replica gets, and so does one that rejoins later.
func TestFleetReplicaLost(t *testing.T) {
	fl := redisFleet(t, 2)
	a, b := fl[0], fl[1]
	ctx := t.Context()
	onA := a.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"lost-run"}`)
	onA.until(t, "TEXT_MESSAGE_CONTENT")
	onB := b.openSSE(ctx, "GET", "/api/v1/runs/lost-run/events", "")
	onB.until(t, "TEXT_MESSAGE_CONTENT")
	a.kill()
	start := time.Now()
	got := onB.wait(t)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the lost run ended after %v", took)
	}
	last := got[len(got)-1].data
	if terminals(got) != 1 || !strings.Contains(last, `"type":"RUN_ERROR"`) || !strings.Contains(last, `"code":"replica_lost"`) {
		t.Fatalf("the follower's stream ends with %s", last)
	}
	again := b.openSSE(ctx, "GET", "/api/v1/runs/lost-run/events", "").wait(t)
	if terminals(again) != 1 || again[len(again)-1] != got[len(got)-1] {
		t.Fatalf("a later rejoin ends with %+v", again[len(again)-1])
	}
	if code, body, _ := b.do("POST", "/api/v1/runs/lost-run/cancel", nil); code != 404 {
		t.Errorf("cancel of the lost run: %d %s", code, body)
	}
	if code, body, _ := b.do("GET", "/api/v1/runs", nil); code != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("B's runs listing after the lost run ended: %d %s", code, body)
	}
}

// A replica killed before its last events reached the log (they are written
// every flush interval; its client had them already): a client that rejoins
// after the last id it got still gets the run's terminal RUN_ERROR
// replica_lost, whose id in the log is lower (its SSE id is above them:
// wireID), instead of an empty stream.
func TestFleetReplicaLostBeforeItsEventsWereKept(t *testing.T) {
	fl := redisFleetFlushing(t, []time.Duration{time.Hour, 0})
	a, b := fl[0], fl[1]
	ctx := t.Context()
	onA := a.openSSE(ctx, "POST", "/api/v1/chains/slow/run", `{"input":"go","stream":true,"runId":"unkept-run"}`)
	onA.until(t, "TEXT_MESSAGE_CONTENT")
	last := onA.until(t, "TEXT_MESSAGE_CONTENT")
	a.die()
	got := b.openSSE(ctx, "GET", "/api/v1/runs/unkept-run/events", "", "Last-Event-ID", strconvU(last)).wait(t)
	if len(got) != 1 || !strings.Contains(got[0].data, `"type":"RUN_ERROR"`) || !strings.Contains(got[0].data, `"code":"replica_lost"`) {
		t.Fatalf("rejoined after %d: %+v", last, got)
	}
}

// The AG-UI route with an event log: the real @ag-ui/client reads its
// frames (each with an `id:`) without a warning; a client that posts its
// RunAgentInput again with Last-Event-ID rejoins the run, and one naming
// another thread is refused.
func TestAGUIEventIDsAndRejoin(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl})
	res := e.runAGUI(false,
		map[string]any{"name": "text", "chain": "chat", "threadId": "thread-ids", "runId": "run-ids", "messages": userMsg("hi there")},
		map[string]any{"name": "server-tool", "chain": "tools", "messages": userMsg("lookup please")},
	)
	checkRun(t, "text", res["text"].Runs[0])
	checkRun(t, "server-tool", res["server-tool"].Runs[0])

	all := e.openSSE(t.Context(), "GET", "/api/v1/runs/run-ids/events", "").wait(t)
	checkIDs(t, "the AG-UI run's log", all, 0)
	input := `{"threadId":"thread-ids","runId":"run-ids","messages":[{"id":"u1","role":"user","content":"hi there"}]}`
	back := e.openSSE(t.Context(), "POST", "/api/v1/chains/chat/agui", input, "Last-Event-ID", "3").wait(t)
	sameData(t, "the AG-UI client back after 3", back, all[3:])
	other := strings.Replace(input, "thread-ids", "thread-other", 1)
	if code, body, _ := e.do("POST", "/api/v1/chains/chat/agui", other, "Last-Event-ID", "3"); code != 409 {
		t.Errorf("another thread's rejoin: %d %s", code, body)
	}
}

// With the fleet's Redis down, a cancel that must ask it where the run is
// answers 503 (try again), not 404: the run may well be running.
func TestFleetCancelWithRedisDown(t *testing.T) {
	fl := redisFleet(t, 1)
	fl[0].redis.Kill(t)
	code, body, _ := fl[0].do("POST", "/api/v1/runs/some-run/cancel", nil)
	if code != 503 || !strings.Contains(string(body), "store") {
		t.Fatalf("cancel with Redis down: %d %s", code, body)
	}
}
