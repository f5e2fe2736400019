package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/ledger"
)

// TestRunAnswerCarriesItsCost: the run route's JSON answer (no stream)
// says what the run cost, as the streamed RUN_FINISHED does: a decimal
// cost and its currency, the same figures, which the ledger holds for the
// run.
func TestRunAnswerCarriesItsCost(t *testing.T) {
	e, l := newUsageEnv(t, "memory", nil, Options{})
	code, body, err := e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend, streamed", "stream": true})
	if err != nil || code != 200 {
		t.Fatalf("streamed run: %d %v %s", code, err, body)
	}
	streamed := readStream(t, body, "", "spend")
	if streamed.cost == "" {
		t.Fatalf("the streamed run has no cost: %+v", streamed)
	}

	code, body, err = e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend, answered"})
	if err != nil || code != 200 {
		t.Fatalf("run: %d %v %s", code, err, body)
	}
	var ans struct {
		runAnswer
		Cost     *string `json:"cost"`
		Currency string  `json:"currency"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		t.Fatal(err)
	}
	if ans.Outcome != OutcomeSuccess || ans.Cost == nil || *ans.Cost != streamed.cost || ans.Currency != "USD" {
		t.Fatalf("the answer's cost %v %q, want %q USD as the stream's: %s", ans.Cost, ans.Currency, streamed.cost, body)
	}
	rep, err := l.Query(t.Context(), ledger.Query{RunID: ans.RunID, Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := ledger.ParseAmount(*ans.Cost); rep.Total.Cost != want || want == 0 {
		t.Errorf("the ledger holds %v for run %s, the answer says %s", rep.Total.Cost, ans.RunID, *ans.Cost)
	}
}
