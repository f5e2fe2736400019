package server

import (
	"strings"
	"testing"
)

// A sub-agent whose tool needs approval pauses the whole run. With the
// lifecycle events opted in, the paused run closes the sub-agent with
// SUBAGENT_FINISHED, outcome suspended, naming the interrupt (AG-UI does
// not allow RUN_FINISHED while a sub-agent is active), and the resumed
// run opens it again before its events go on; the node step the pause
// closed is opened again too, with or without the opt-in. Checked by the
// real client and by our rules.
func TestSubagentApprovalSuspendsAndResumes(t *testing.T) {
	e := newAPIEnv(t, Options{})
	deployLead(t, e, "lead", "guarded")
	res := e.runAGUI(false,
		map[string]any{"name": "opted-in", "chain": "lead", "messages": userMsg("delegate it"),
			"forwardedProps": map[string]any{"ruleagent": map[string]any{"subagentEvents": true}},
			"answers":        map[string]any{"lookup": map[string]any{"approved": true}}},
		map[string]any{"name": "plain", "chain": "lead", "messages": userMsg("delegate it"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
	)
	for _, name := range []string{"opted-in", "plain"} {
		r := res[name]
		if len(r.Runs) != 2 {
			t.Fatalf("%s: %d runs: %+v", name, len(r.Runs), r.Runs)
		}
		first := checkRun(t, name+"#1", r.Runs[0])
		second := checkRun(t, name+"#2", r.Runs[1])
		if r.Runs[0].Finished == nil || r.Runs[0].Finished.Outcome != "interrupt" {
			t.Fatalf("%s: the first run did not pause: %v", name, eventTypes(first))
		}
		if got := second[len(second)-1]["result"]; !strings.Contains(toString(got), "Done:") {
			t.Errorf("%s: the resumed run ended with %v", name, got)
		}
		starts, finishes := countEvents(first, "SUBAGENT_STARTED"), countEvents(first, "SUBAGENT_FINISHED")
		if name == "plain" {
			if starts+finishes+countEvents(second, "SUBAGENT_STARTED")+countEvents(second, "SUBAGENT_FINISHED") != 0 {
				t.Errorf("plain: lifecycle events sent without the opt-in")
			}
			continue
		}
		if starts != 1 || finishes != 1 {
			t.Fatalf("opted-in #1: %d started, %d finished: %v", starts, finishes, eventTypes(first))
		}
		var fin map[string]any
		for _, ev := range first {
			if ev["type"] == "SUBAGENT_FINISHED" {
				fin = ev
			}
		}
		out, _ := fin["outcome"].(map[string]any)
		ids, _ := out["interruptIds"].([]any)
		ins, _ := first[len(first)-1]["outcome"].(map[string]any)["interrupts"].([]any)
		if out["type"] != "suspended" || len(ids) != 1 || len(ins) != 1 || ids[0] != ins[0].(map[string]any)["id"] {
			t.Errorf("opted-in #1: SUBAGENT_FINISHED %v for interrupts %v", fin, ins)
		}
		if countEvents(second, "SUBAGENT_STARTED") != 1 || countEvents(second, "SUBAGENT_FINISHED") != 1 {
			t.Errorf("opted-in #2: the sub-agent is not reopened and closed: %v", eventTypes(second))
		}
	}
}

// deployLead deploys chain id: the tools agent with one sub-agent tool,
// helper, that runs chain target.
func deployLead(t *testing.T, e *apiEnv, id, target string) {
	t.Helper()
	lead := chainDSL(id, "Lead", nil, agentNode(promptTools, map[string]any{"tools": []any{
		map[string]any{"type": "agent", "name": "helper", "targetId": target},
	}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/"+id, lead); code != 200 {
		t.Fatalf("deploy %s: %d %s", id, code, body)
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

// Cancelling a run while a sub-agent streams ends the sub-agent, then the
// run, as the real client accepts, with the lifecycle events opted in.
func TestCancelDuringSubagent(t *testing.T) {
	e := newAPIEnv(t, Options{})
	deployLead(t, e, "lead-slow", "slow")
	res := e.runAGUI(false, map[string]any{"name": "cancel", "chain": "lead-slow", "messages": userMsg("delegate it"),
		"forwardedProps": map[string]any{"ruleagent": map[string]any{"subagentEvents": true}},
		"cancelOn":       "TEXT_MESSAGE_CONTENT"})
	r := res["cancel"]
	if len(r.Runs) != 1 {
		t.Fatalf("%d runs", len(r.Runs))
	}
	evs := checkRun(t, "cancel", r.Runs[0])
	if r.Runs[0].Finished == nil || r.Runs[0].Finished.Outcome != "cancelled" {
		t.Fatalf("not cancelled: %v", eventTypes(evs))
	}
	if countEvents(evs, "SUBAGENT_STARTED") != 1 || countEvents(evs, "SUBAGENT_FINISHED")+countEvents(evs, "SUBAGENT_ERROR") != 1 {
		t.Errorf("the sub-agent is not closed once: %v", eventTypes(evs))
	}
}
