package server

import (
	"encoding/json"
	"fmt"
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

// TestOpenAIAnswersCarryTheirCost: with a price table, the OpenAI route's
// answers carry the run's cost in their usage (usage.cost, a decimal
// string, and usage.currency: fields OpenAI's clients pass through), as
// the run route's answer does: non-streamed, and streamed in the last
// chunk (stream_options.include_usage); the openai npm client keeps them.
func TestOpenAIAnswersCarryTheirCost(t *testing.T) {
	e, _ := newUsageEnv(t, "memory", nil, Options{})
	code, body, err := e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend"})
	var ans struct {
		Cost     string `json:"cost"`
		Currency string `json:"currency"`
	}
	if err != nil || code != 200 || json.Unmarshal(body, &ans) != nil || ans.Cost == "" || ans.Currency != "USD" {
		t.Fatalf("the run route's answer: %d %v %s", code, err, body)
	}
	user := []any{map[string]any{"role": "user", "content": "spend"}}
	// The server asks for no token; the client sends one anyway.
	res := runOpenAIClient(t, e.base, "any",
		map[string]any{"name": "create", "kind": "create", "model": "spend", "messages": user},
		map[string]any{"name": "stream", "kind": "stream", "model": "spend", "messages": user},
	)
	for _, name := range []string{"create", "stream"} {
		r := res[name]
		if r.Error != nil || r.Completion == nil || r.Completion.Usage == nil || r.Completion.Usage.Cost == nil ||
			*r.Completion.Usage.Cost != ans.Cost || r.Completion.Usage.Currency != "USD" || r.Completion.Usage.TotalTokens != 1600 {
			t.Errorf("%s: %+v %+v, want usage.cost %s USD", name, r.Error, r.Completion, ans.Cost)
		}
	}
	chunks := res["stream"].Chunks
	if n := len(chunks); n == 0 || fmt.Sprint(chunks[n-1]["usage"].(map[string]any)["cost"]) != ans.Cost {
		t.Errorf("the last chunk: %v", chunks)
	}
}
