package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// TestReplayReproducesAMixedRun: a run with text and reasoning, parallel
// tool calls (a rulechain tool with its node steps, and a sub-agent), an
// approval pause and its resume, and a failover, is recorded as it
// streams; its replay calls no LLM, runs no tool, and emits the same
// events (ids and times aside), each of its segments a valid AG-UI run.
func TestReplayReproducesAMixedRun(t *testing.T) {
	e := newRecEnv(t)
	runID, evs := e.runMixed()
	all := string(bytes.Join(evs, []byte("\n")))
	for _, want := range []string{`"type":"REASONING_MESSAGE_CONTENT"`, `"type":"TEXT_MESSAGE_CONTENT"`, `"type":"SUBAGENT_STARTED"`,
		`"name":"ruleagent.llm_failover"`, `"outcome":{"type":"interrupt"`, `"nodeId":"js"`} {
		if !strings.Contains(all, want) {
			t.Fatalf("the mixed run has no %s:\n%s", want, all)
		}
	}
	calls := e.llmCalls()
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/replay", map[string]any{})
	if code != http.StatusOK {
		t.Fatalf("replay: %d %s", code, body)
	}
	var rep ReplayReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Same || rep.Outcome != OutcomeSuccess || rep.Events != len(evs) || rep.RecordedEvents != len(evs) || rep.Of != runID {
		t.Fatalf("the replay is not the run: %s", body)
	}
	if n := e.llmCalls(); n != calls {
		t.Fatalf("the replay called the LLM %d times", n-calls)
	}

	// The same through the Go API, with the replay's events checked.
	rec, err := e.store.GetRecord(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var got events.Recorder
	r, err := e.store.Replay(context.Background(), rec, evs, ReplayOptions{Sink: &got})
	if err != nil || !r.Same {
		t.Fatalf("replay: %+v %v", r, err)
	}
	for i, seg := range segments(got.JSON()) {
		for _, v := range aguicheck.Check(seg) {
			t.Errorf("the replay's segment %d: %v", i+1, v)
		}
	}
}

// TestReplayRunsTheRecordedChain: a chain changed since the run does not
// change its replay, which runs the definitions the record keeps.
func TestReplayRunsTheRecordedChain(t *testing.T) {
	e := newRecEnv(t)
	runID, _ := e.runMixed()
	changed := strings.Replace(recChains(e.backup.URL)["mixed"], promptMixed, "You are someone else.", 1)
	if code, body, _ := e.do("PUT", "/api/v1/chains/mixed", changed); code != http.StatusOK {
		t.Fatalf("put: %d %s", code, body)
	}
	code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/replay", map[string]any{})
	if code != http.StatusOK || !strings.Contains(string(body), `"same":true`) {
		t.Fatalf("replay after a change: %d %s", code, body)
	}
}

// TestReplayNamesTheFirstDivergence: a replay that does not do what the
// run did stops at the first call that differs, and names its field.
func TestReplayNamesTheFirstDivergence(t *testing.T) {
	e := newRecEnv(t)
	runID, evs := e.runMixed()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		tamper func(rec *runrecord.Record)
		what   string
		field  string
	}{
		{"a changed system prompt", func(rec *runrecord.Record) {
			rec.Chains["mixed"] = json.RawMessage(strings.Replace(string(rec.Chains["mixed"]), promptMixed, "You are changed.", 1))
		}, "LLM call 1 of agent run mixed:agent (turn 1)", "messages[0].content"},
		{"a tool result that differs", func(rec *runrecord.Record) {
			for i := range rec.ToolCalls {
				if rec.ToolCalls[i].Name == "lookup" {
					rec.ToolCalls[i].Result.Text = `{"found":"Z-9"}`
				}
			}
		}, "LLM call 2 of agent run mixed:agent (turn 2)", "messages[3].content"},
		{"an LLM call the record lacks", func(rec *runrecord.Record) {
			rec.LLMCalls = slices.DeleteFunc(rec.LLMCalls, func(c runrecord.LLMCall) bool { return c.Agent == "mixed:agent" && c.Step == 2 })
		}, "LLM call 2 of agent run mixed:agent (turn 2)", "not in the record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec, err := e.store.GetRecord(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			c.tamper(rec)
			rep, err := e.store.Replay(ctx, rec, evs, ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Same || rep.Divergence == nil || rep.Divergence.What != c.what || rep.Divergence.Field != c.field ||
				!errors.Is(rep.Divergence, ErrDivergence) {
				t.Fatalf("got %+v, want the divergence %s: %s", rep.Divergence, c.what, c.field)
			}
			if rep.Difference == nil {
				t.Fatalf("a diverging replay's events are the run's")
			}
		})
	}
}

// segments splits a run's events at its terminal events.
func segments(evs [][]byte) [][][]byte {
	var out [][][]byte
	start := 0
	for i, e := range evs {
		if bytes.Contains(e, []byte(`"type":"RUN_FINISHED"`)) || bytes.Contains(e, []byte(`"type":"RUN_ERROR"`)) {
			out = append(out, evs[start:i+1])
			start = i + 1
		}
	}
	return out
}
