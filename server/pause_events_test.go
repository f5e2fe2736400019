package server

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var updatePauseEvents = flag.Bool("update-pause-events", false, "rewrite testdata/pause_events.json with the event sequences this run saw")

// The events of paused-then-resumed runs, as clients see them, for every
// kind of pause: an approval (approved, approved with edited arguments,
// denied, cancelled), a form, two approvals in one sequential turn, an
// approval inside a sub-agent (with and without the lifecycle events), a
// front-end tool, and an approval "always" over the run route (SSE). Each
// sequence is normalised (ids named by first appearance, times dropped)
// and compared with testdata/pause_events.json, which was recorded when a
// paused run was a goroutine waiting for its answer: a run that pauses as a
// checkpoint must look exactly the same, usage included (a resumed run
// reports only what it spent after the pause).
func TestPausedRunEventsUnchanged(t *testing.T) {
	e := newAPIEnv(t, Options{})
	deployLead(t, e, "lead", "guarded")
	seq := chainDSL("double-seq", "Double", nil, agentNode(promptDouble, map[string]any{"parallelToolCalls": false,
		"approval": map[string]any{"tools": []any{"look*"}}, "tools": []any{lookupTool()}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/double-seq", seq); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	optIn := map[string]any{"ruleagent": map[string]any{"subagentEvents": true}}
	confirm := []any{map[string]any{"name": "confirm", "description": "Asks the person to confirm.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}
	res := e.runAGUI(false,
		map[string]any{"name": "approve", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
		map[string]any{"name": "edit", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true, "arguments": map[string]any{"key": "EDITED-7"}}}},
		map[string]any{"name": "deny", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"approved": false, "reason": "not on a Friday"}}},
		map[string]any{"name": "cancelled", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"status": "cancelled"}}},
		map[string]any{"name": "form", "chain": "guarded", "messages": userMsg("ask me"),
			"answers": map[string]any{"ask_person": map[string]any{"size": "M"}}},
		map[string]any{"name": "sequential", "chain": "double-seq", "messages": userMsg("both"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
		map[string]any{"name": "subagent-opted-in", "chain": "lead", "messages": userMsg("delegate it"), "forwardedProps": optIn,
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
		map[string]any{"name": "subagent-plain", "chain": "lead", "messages": userMsg("delegate it"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true}}},
		map[string]any{"name": "front-end-tool", "chain": "tools", "messages": userMsg("confirm the shipment"), "tools": confirm,
			"toolResults": map[string]any{"confirm": "yes"}},
	)
	got := map[string][][]string{}
	for name, r := range res {
		// One normaliser per scenario: an id keeps its name across the
		// pause (the resumed call's result names the paused call).
		norm := newNormaliser()
		for i, run := range r.Runs {
			evs := checkRun(t, fmt.Sprintf("%s#%d", name, i+1), run)
			got[name] = append(got[name], nil)
			for _, ev := range evs {
				got[name][i] = append(got[name][i], norm.event(ev))
			}
		}
	}
	got["run-route-always"] = alwaysOverTheRunRoute(t, e)

	path := filepath.Join("testdata", "pause_events.json")
	if *updatePauseEvents {
		b, _ := json.MarshalIndent(got, "", " ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][][]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !reflect.DeepEqual(got[name], want[name]) {
			t.Errorf("%s: the events differ from those of the recorded run:\n%s", name, diffRuns(want[name], got[name]))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: no recorded sequence", name)
		}
	}
}

// alwaysOverTheRunRoute pauses a lookup over the run route (SSE),
// approves it "always" (the same call later runs without asking, another
// asks again), then approves the other.
func alwaysOverTheRunRoute(t *testing.T, e *apiEnv) [][]string {
	t.Helper()
	dsl := chainDSL("repeat", "Repeat", nil, agentNode(promptRepeat, map[string]any{"parallelToolCalls": false,
		"approval": map[string]any{"tools": []any{"look*"}}, "tools": []any{lookupTool()}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/repeat", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	var out [][]string
	norm := newNormaliser()
	segment := func(path string, body map[string]any) []map[string]any {
		code, raw, _ := e.do("POST", path, body)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, raw)
		}
		var evs []map[string]any
		var line []string
		for _, b := range sseEvents(t, raw) {
			var ev map[string]any
			_ = json.Unmarshal(b, &ev)
			evs = append(evs, ev)
			line = append(line, norm.event(ev))
		}
		out = append(out, line)
		return evs
	}
	interruptOf := func(evs []map[string]any) string {
		last := evs[len(evs)-1]
		out, _ := last["outcome"].(map[string]any)
		ins, _ := out["interrupts"].([]any)
		if len(ins) != 1 {
			t.Fatalf("the run did not pause on one interrupt: %v", last)
		}
		return ins[0].(map[string]any)["id"].(string)
	}
	evs := segment("/api/v1/chains/repeat/run", map[string]any{"input": "go", "threadId": "t-repeat", "runId": "run-repeat", "stream": true})
	evs = segment("/api/v1/runs/run-repeat/resume", map[string]any{"stream": true, "resume": []any{
		map[string]any{"interruptId": interruptOf(evs), "status": "resolved", "payload": map[string]any{"approved": true, "always": true}}}})
	segment("/api/v1/runs/run-repeat/resume", map[string]any{"stream": true, "resume": []any{
		map[string]any{"interruptId": interruptOf(evs), "status": "resolved", "payload": map[string]any{"approved": true}}}})
	return out
}

func lookupTool() map[string]any {
	return map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}, "required": []any{"key"}}}
}

// normaliser names the ids of a scenario by their first appearance and
// drops what changes from run to run (times, durations, expiry).
type normaliser struct{ ids map[string]string }

func newNormaliser() *normaliser { return &normaliser{ids: map[string]string{}} }

// idKeys are the fields whose values are ids.
var idKeys = map[string]bool{"threadId": true, "runId": true, "messageId": true, "toolCallId": true, "parentMessageId": true,
	"subagentRunId": true, "parentSubagentRunId": true, "parentToolCallId": true, "parentRunId": true, "id": true,
	"interruptIds": true, "pendingToolCallIds": true}

var durationText = regexp.MustCompile(`duration: [0-9.]+[µm]?s`)

var dropKeys = map[string]bool{"timestamp": true, "durationMs": true, "expiresAt": true, "provider": true}

func (n *normaliser) name(v string) string {
	if v == "" {
		return v
	}
	if id, ok := n.ids[v]; ok {
		return id
	}
	id := fmt.Sprintf("<id%d>", len(n.ids)+1)
	n.ids[v] = id
	return id
}

func (n *normaliser) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range x {
			if !dropKeys[k] {
				out[k] = n.value(k, sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, sub := range x {
			out[i] = n.value(key, sub)
		}
		return out
	case string:
		if idKeys[key] {
			return n.name(x)
		}
		// A command's duration in a bash result.
		x = durationText.ReplaceAllString(x, "duration: <ms>")
		for id, name := range n.ids {
			// Ids inside text (a sub-agent's call id in a question).
			if len(id) > 6 && strings.Contains(x, id) {
				x = strings.ReplaceAll(x, id, name)
			}
		}
		return x
	}
	return v
}

func (n *normaliser) event(ev map[string]any) string {
	// Ids first, in a fixed order, so that names do not depend on map order.
	for _, k := range []string{"threadId", "runId", "subagentRunId", "parentToolCallId", "messageId", "toolCallId", "parentMessageId"} {
		if s, ok := ev[k].(string); ok {
			n.name(s)
		}
	}
	b, _ := json.Marshal(n.value("", ev))
	return string(b)
}

// diffRuns shows the first event of each run where two sequences differ.
func diffRuns(want, got [][]string) string {
	var b strings.Builder
	if len(want) != len(got) {
		fmt.Fprintf(&b, "%d runs, want %d\n", len(got), len(want))
	}
	for i := 0; i < len(want) && i < len(got); i++ {
		for j := 0; j < max(len(want[i]), len(got[i])); j++ {
			var w, g string
			if j < len(want[i]) {
				w = want[i][j]
			}
			if j < len(got[i]) {
				g = got[i][j]
			}
			if w != g {
				fmt.Fprintf(&b, "run %d, event %d:\n  want %s\n  got  %s\n", i+1, j+1, w, g)
				break
			}
		}
	}
	return b.String()
}
