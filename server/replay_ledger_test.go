package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/ledger"
)

// TestReplaysCostNothingAndForksTheirLiveCalls: in the usage ledger, a
// replay adds nothing (its answers were spent by the recorded run), and a
// fork adds exactly the LLM calls it made live, not those answered from
// the record.
func TestReplaysCostNothingAndForksTheirLiveCalls(t *testing.T) {
	l, err := ledger.New(ledger.Options{Store: ledger.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	e := newRecEnv(t, func(so *StoreOptions, _ *Options) {
		if so != nil {
			so.Ledger = l
		}
	})
	calls := func() int64 {
		ctx := context.Background()
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		rep, err := l.Query(ctx, ledger.Query{Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Total.Calls
	}
	runID, _ := e.runMixed()
	// Turn 1, the sub-agent's, turn 2 and turn 3 (answered by the
	// failover endpoint: the failed attempt spent nothing).
	ran := calls()
	if ran != 4 {
		t.Fatalf("the run: %d calls in the ledger, want 4", ran)
	}
	if code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/replay", map[string]any{}); code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	if n := calls(); n != ran {
		t.Fatalf("the replay added %d calls to the ledger", n-ran)
	}
	made := e.llmCalls()
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/fork", map[string]any{"step": 2})
	if code != http.StatusOK {
		t.Fatalf("fork: %d %s", code, body)
	}
	live := e.llmCalls() - made
	if live != 1 {
		t.Fatalf("the fork made %d live calls, want its turn 2", live)
	}
	if n := calls(); n != ran+int64(live) {
		t.Fatalf("the fork added %d calls to the ledger, it made %d live", n-ran, live)
	}
	// It waits for its approval: end it.
	var fork struct{ RunID string }
	_ = json.Unmarshal(body, &fork)
	if code, body, _ := e.do("POST", "/api/v1/runs/"+fork.RunID+"/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
}
