package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/state/runrecord"
)

// TestEveryRouteIsRecorded: a run is recorded whichever route started
// it (the run route, AG-UI, OpenAI-compatible), and each replays to the
// same events.
func TestEveryRouteIsRecorded(t *testing.T) {
	e := newRecEnv(t)
	if code, body, _ := e.do("POST", "/api/v1/chains/summariser/run", map[string]any{"input": "summarise A-1"}); code != http.StatusOK {
		t.Fatalf("run: %d %s", code, body)
	}
	if code, body, _ := e.do("POST", "/api/v1/chains/summariser/agui", map[string]any{"threadId": "t-agui", "runId": "r-agui",
		"messages": []any{map[string]any{"id": "u1", "role": "user", "content": "summarise B-2"}}}); code != http.StatusOK {
		t.Fatalf("agui: %d %s", code, body)
	}
	if code, body, _ := e.do("POST", "/v1/chat/completions", map[string]any{"model": "summariser",
		"messages": []any{map[string]any{"role": "user", "content": "summarise C-3"}}}); code != http.StatusOK {
		t.Fatalf("openai: %d %s", code, body)
	}
	var list []runrecord.Meta
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_, body, _ := e.do("GET", "/api/v1/records?chain=summariser", nil)
		list = nil
		_ = json.Unmarshal(body, &list)
		if len(list) == 3 {
			break
		}
	}
	var sources []string
	for _, m := range list {
		sources = append(sources, m.Source)
		if m.Outcome != OutcomeSuccess || !m.Replayable || m.LLMCalls != 1 {
			t.Errorf("%s: %+v", m.Source, m)
		}
		code, body, _ := e.do("POST", "/api/v1/runs/"+m.RunID+"/replay", map[string]any{})
		var rep ReplayReport
		_ = json.Unmarshal(body, &rep)
		if code != http.StatusOK || !rep.Same {
			t.Errorf("the %s run's replay: %d %s", m.Source, code, body)
		}
	}
	slices.Sort(sources)
	if !slices.Equal(sources, []string{"agui", "openai", "run"}) {
		t.Fatalf("recorded sources %v, want agui, openai and run", sources)
	}
}
