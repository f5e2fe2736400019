package server

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/ruleagent/ruleagent/events"
)

func totalTokens(us []events.TokenUsage) int64 {
	var n int64
	for _, u := range us {
		n += u.TotalTokens
	}
	return n
}

// A resumed run's usage covers only what was spent after the pause: the
// paused answer's and the resumed answer's usage add up to the run's.
func TestResumedRunUsageStartsAtThePause(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it"})
	var paused runAnswer
	if code != 200 || json.Unmarshal(body, &paused) != nil || paused.Outcome != "interrupt" || totalTokens(paused.Usage) == 0 {
		t.Fatalf("run: %d %s", code, body)
	}
	code, body, _ = e.do("POST", "/api/v1/runs/"+paused.RunID+"/resume", map[string]any{"resume": []any{map[string]any{
		"interruptId": paused.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	var resumed runAnswer
	if code != 200 || json.Unmarshal(body, &resumed) != nil || resumed.Outcome != "success" {
		t.Fatalf("resume: %d %s", code, body)
	}
	whole, _ := strconv.ParseInt(resumed.Metadata["totalTokens"], 10, 64)
	if p, r := totalTokens(paused.Usage), totalTokens(resumed.Usage); whole == 0 || p+r != whole {
		t.Fatalf("paused usage %d + resumed usage %d, the run's %d", p, r, whole)
	}
}
