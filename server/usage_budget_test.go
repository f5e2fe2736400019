package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/ledger"
)

// TestDailyBudgetStopsTheRunThatCrossesIt runs four spending runs at once:
// alice (1000 tokens a day) and bob (no budget) on chain spend, carol and
// dave on chain spend2 (0.0025 USD a day) and spend. Each run takes four
// turns of 400 tokens (0.001 USD). Alice's run and the spend2 run cross
// their budgets on their third turn and end before the fourth with
// RUN_ERROR limit_exceeded naming the budget; bob's and dave's finish.
// Then a new run of alice is refused before any LLM call, and the
// overshoot stays within one call. Embedded and Redis.
func TestDailyBudgetStopsTheRunThatCrossesIt(t *testing.T) {
	for _, backend := range []string{"bolt", "redis"} {
		t.Run(backend, func(t *testing.T) { testDailyBudget(t, backend) })
	}
}

func testDailyBudget(t *testing.T, backend string) {
	budgets, err := ledger.ParseBudgets([]byte(`{"users": {"alice": {"tokensPerDay": 1000}}, "chains": {"spend2": {"costPerDay": "0.0025"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newUsageEnv(t, backend, budgets, Options{})
	type run struct{ user, chain string }
	runs := []run{{"alice", "spend"}, {"bob", "spend"}, {"carol", "spend2"}, {"dave", "spend"}}
	ends := make([]streamEnd, len(runs))
	var wg sync.WaitGroup
	errs := make(chan error, len(runs))
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, err := e.post("/api/v1/chains/"+r.chain+"/run", map[string]any{"input": "spend, " + r.user, "stream": true,
				"metadata": map[string]any{"userId": r.user}})
			if err != nil || code != 200 {
				errs <- fmt.Errorf("%s: %d %v %s", r.user, code, err, body)
				return
			}
			ends[i] = readStream(t, body, r.user, r.chain)
			if ends[i].terminal == "RUN_ERROR" {
				ends[i].code += " " + lastMessage(body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, want := range []string{`users["alice"].tokensPerDay`, "", `chains["spend2"].costPerDay`, ""} {
		got := ends[i]
		if want == "" {
			if got.terminal != "RUN_FINISHED" || got.toolResults != 3 {
				t.Errorf("%s's run should have finished: %+v", runs[i].user, got)
			}
			continue
		}
		if got.terminal != "RUN_ERROR" || !strings.HasPrefix(got.code, agent.CodeLimit+" ") || !strings.Contains(got.code, want) {
			t.Errorf("%s's run should have ended on its budget %s: %+v", runs[i].user, want, got)
		}
		if got.toolResults != 3 || len(got.usage) != 1 || got.usage[0].InputTokens != 900 {
			t.Errorf("%s's run should have ended before its fourth turn: %+v", runs[i].user, got)
		}
	}

	// Spent: a new run of alice is refused before it reaches the LLM, as
	// a Failure with the limit named; bob still runs.
	before := len(e.llm.Requests())
	code, body, _ := e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend again", "metadata": map[string]any{"userId": "alice"}})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.ErrorCode != agent.CodeLimit || ans.Metadata["errorLimit"] != ledger.LimitUserTokens ||
		!strings.Contains(ans.Error, `user "alice" has used 1200 tokens today`) {
		t.Fatalf("a spent user's run: %d %s", code, body)
	}
	if n := len(e.llm.Requests()); n != before {
		t.Fatalf("the refused run reached the LLM (%d requests)", n-before)
	}
	// The overshoot is at most one LLM call: 1200 for a budget of 1000,
	// with calls of 400.
	code, body, _ = e.do("GET", "/api/v1/usage?since=1h&by=user&user=alice", nil)
	var rep ledger.Report
	if code != 200 || json.Unmarshal(body, &rep) != nil || rep.Total.TotalTokens != 1200 || rep.Total.Calls != 3 {
		t.Fatalf("alice's usage: %d %s", code, body)
	}
	_, metrics, _ := e.do("GET", "/metrics", nil)
	if !strings.Contains(string(metrics), `ruleagent_limit_hits_total{limit="users.tokensPerDay"}`) ||
		!strings.Contains(string(metrics), `ruleagent_limit_hits_total{limit="chains.costPerDay"}`) {
		t.Errorf("the budgets reached are not counted in ruleagent_limit_hits_total")
	}
}

// lastMessage is the message of a stream's RUN_ERROR.
func lastMessage(body []byte) string {
	i := strings.LastIndex(string(body), `"type":"RUN_ERROR"`)
	if i < 0 {
		return ""
	}
	var ev struct{ Message string }
	line := string(body[strings.LastIndex(string(body[:i]), "data: ")+6:])
	line = line[:strings.Index(line, "\n")]
	_ = json.Unmarshal([]byte(line), &ev)
	return ev.Message
}
