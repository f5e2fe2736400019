package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// TestForkFromStep2WithAnEditedToolResult: a fork from the mixed run's
// second turn, with the result of the first turn's lookup edited, replays
// the first turn from the record (no LLM call, no tool run) and calls the
// model live from the second on: the model reads the edited result. The
// fork pauses for its own approval, is answered, fails over as the run
// did, and is recorded as a run of its own, linked to the original.
func TestForkFromStep2WithAnEditedToolResult(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	rec, err := e.store.GetRecord(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	lookupID := ""
	for _, c := range rec.ToolCalls {
		if c.Name == "lookup" {
			lookupID = c.ID
		}
	}
	before := len(e.llm.Requests())
	edited := `{"found":"A-1","stock":0,"note":"edited"}`
	code, body, hdr := e.do("POST", "/api/v1/runs/"+runID+"/fork", map[string]any{"step": 2,
		"edits": map[string]any{"toolResults": []any{map[string]any{"toolCallId": lookupID, "content": edited}}}})
	if code != http.StatusOK {
		t.Fatalf("fork: %d %s", code, body)
	}
	var ans struct {
		RunID      string                `json:"runId"`
		Outcome    string                `json:"outcome"`
		Interrupts []struct{ ID string } `json:"interrupts"`
		ForkedFrom runrecord.ForkRef     `json:"forkedFrom"`
		Parent     string                `json:"parentRunId"`
	}
	_ = json.Unmarshal(body, &ans)
	if ans.Outcome != OutcomeInterrupt || len(ans.Interrupts) != 1 || ans.ForkedFrom.RunID != runID || ans.ForkedFrom.Step != 2 || ans.Parent != runID ||
		hdr.Get("X-Run-Id") != ans.RunID {
		t.Fatalf("the fork did not go live to its approval: %s", body)
	}
	reqs := e.llm.Requests()[before:]
	if len(reqs) != 1 || reqs[0].Turn() != 1 {
		t.Fatalf("the fork sent %d requests, want only its turn 2", len(reqs))
	}
	var seen string
	for _, m := range reqs[0].ToolResults() {
		if m.ToolCallID == lookupID {
			seen = m.Content
		}
	}
	if seen != edited {
		t.Fatalf("the model read %q, want the edited result", seen)
	}

	// Its approval is the fork's own: answered, it goes on live.
	code, body, _ = e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{
		"resume": []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != http.StatusOK || !strings.Contains(string(body), `"outcome":"success","data":"Done: `) {
		t.Fatalf("the fork's end: %d %s", code, body)
	}
	// Its last turn (failed over, as the run's was) still reads the edit.
	if last := e.backup.LastRequest(); !strings.Contains(last.Messages[3].Content, `"note":"edited"`) {
		t.Fatalf("the fork's last turn read %+v", last.Messages)
	}

	// The fork is listed as a run of its own, from the original.
	var list []runrecord.Meta
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		_, b, _ := e.do("GET", "/api/v1/records", nil)
		_ = json.Unmarshal(b, &list)
		if len(list) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(list) != 2 || list[0].RunID != ans.RunID || list[0].ForkedFrom == nil || list[0].ForkedFrom.RunID != runID || list[0].ParentRunID != runID ||
		list[0].Source != SourceFork || list[1].RunID != runID {
		t.Fatalf("records: %+v", list)
	}
	// And it replays as it ran.
	code, body, _ = e.do("POST", "/api/v1/runs/"+ans.RunID+"/replay", map[string]any{})
	if code != http.StatusOK || !strings.Contains(string(body), `"same":true`) {
		t.Fatalf("the fork's replay: %d %s", code, body)
	}
}

// TestForkWithAnotherModelAndPrompt: the live turns of a fork ask for the
// model it names, with the system prompt and message it edited.
func TestForkWithAnotherModelAndPrompt(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	before := len(e.llm.Requests())
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/fork", map[string]any{"step": 1, "model": "bigger-model",
		"edits": map[string]any{"systemPrompt": promptMixed + " Be brief.", "messages": []any{map[string]any{"index": 1, "content": "Look up C-3."}}}})
	if code != http.StatusOK {
		t.Fatalf("fork: %d %s", code, body)
	}
	var reqs []*llmtest.Request
	for _, r := range e.llm.Requests()[before:] {
		if strings.HasPrefix(r.System(), promptMixed) {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		t.Fatal("the fork called no model")
	}
	r := reqs[0]
	if r.Model != "bigger-model" || r.System() != promptMixed+" Be brief." || r.LastUserText() != "Look up C-3." {
		t.Fatalf("the fork's first turn: model %q, system %q, user %q", r.Model, r.System(), r.LastUserText())
	}
	// Its second turn keeps the edits.
	if len(reqs) < 2 || reqs[1].Model != "bigger-model" || reqs[1].System() != promptMixed+" Be brief." {
		t.Fatalf("the fork's second turn: %d requests", len(reqs))
	}
	// It waits for its own approval: end it.
	var ans struct{ RunID string }
	_ = json.Unmarshal(body, &ans)
	if code, body, _ := e.do("POST", "/api/v1/runs/"+ans.RunID+"/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
}

// TestForkRefusals: a fork that does not fit the record is refused,
// naming what does not fit.
func TestForkRefusals(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"step": 9}, "step 9: the agent run mixed:agent made turns 1 to 3"},
		{map[string]any{"step": 2, "agent": "nope"}, `no agent run "nope"`},
		{map[string]any{"step": 2, "edits": map[string]any{"messages": []any{map[string]any{"index": 40, "content": "x"}}}}, "edits.messages[0].index: 40"},
		{map[string]any{"step": 1, "edits": map[string]any{"toolResults": []any{map[string]any{"toolCallId": "call_x", "content": "x"}}}}, `reads no result of a call "call_x"`},
	} {
		code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/fork", c.body)
		var ae struct{ Error string }
		_ = json.Unmarshal(body, &ae)
		if code != http.StatusBadRequest || !strings.Contains(ae.Error, c.want) {
			t.Errorf("%v: %d %s, want 400 naming %q", c.body, code, body, c.want)
		}
	}
	if code, body, _ := e.do("POST", "/api/v1/runs/run-unknown/fork", map[string]any{"step": 1}); code != http.StatusNotFound {
		t.Errorf("an unknown run: %d %s", code, body)
	}
}

// TestForkStreamsLikeTheRunRoute: with "stream" the fork answers as the
// run route does, AG-UI events as SSE, its RUN_STARTED naming the run it
// was forked from (parentRunId).
func TestForkStreamsLikeTheRunRoute(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	code, body, hdr := e.do("POST", "/api/v1/runs/"+runID+"/fork", map[string]any{"step": 1, "stream": true})
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("fork: %d %s %s", code, hdr.Get("Content-Type"), body)
	}
	evs := sseEvents(t, body)
	var first struct {
		Type, RunID, ParentRunID string
	}
	_ = json.Unmarshal(evs[0], &first)
	if first.Type != "RUN_STARTED" || first.RunID != hdr.Get("X-Run-Id") || first.ParentRunID != runID {
		t.Fatalf("the fork's first event: %s", evs[0])
	}
	last := string(evs[len(evs)-1])
	if !strings.Contains(last, `"outcome":{"type":"interrupt"`) {
		t.Fatalf("the fork did not run to its approval: %s", last)
	}
	if code, body, _ := e.do("POST", "/api/v1/runs/"+first.RunID+"/cancel", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", code, body)
	}
}
