package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/peers"
)

// aguiRun is one run as the real @ag-ui/client HttpAgent saw it.
type aguiRun struct {
	RunID    string            `json:"runId"`
	Events   []json.RawMessage `json:"events"`
	Error    string            `json:"error"`
	Warnings []string          `json:"warnings"`
	Finished *struct {
		Outcome            string   `json:"outcome"`
		PendingToolCallIDs []string `json:"pendingToolCallIds"`
		Result             any      `json:"result"`
	} `json:"finished"`
}

type aguiResult struct {
	Name     string            `json:"name"`
	Runs     []aguiRun         `json:"runs"`
	Messages []json.RawMessage `json:"messages"`
}

// runAGUI drives the AG-UI endpoint with the real client.
func (e *apiEnv) runAGUI(concurrent bool, scenarios ...map[string]any) map[string]aguiResult {
	e.t.Helper()
	in, _ := json.Marshal(map[string]any{"url": e.base, "token": e.opts.Token, "concurrent": concurrent, "scenarios": scenarios})
	out := peers.RunScript(e.t, "agui-http.mjs", in, 3*time.Minute)
	var results []aguiResult
	if err := json.Unmarshal(out, &results); err != nil {
		e.t.Fatalf("agui-http output: %v\n%.2000s", err, out)
	}
	byName := map[string]aguiResult{}
	for _, r := range results {
		byName[r.Name] = r
	}
	return byName
}

// checkRun asserts the client accepted the run without a warning, and
// checks its events with our own AG-UI rules and schema.
func checkRun(t *testing.T, name string, r aguiRun) []map[string]any {
	t.Helper()
	if r.Error != "" {
		t.Errorf("%s: the client failed: %s", name, r.Error)
	}
	for _, w := range r.Warnings {
		t.Errorf("%s: the client warned: %s", name, w)
	}
	raw := make([][]byte, len(r.Events))
	evs := make([]map[string]any, len(r.Events))
	for i, ev := range r.Events {
		raw[i] = ev
		_ = json.Unmarshal(ev, &evs[i])
	}
	for _, v := range aguicheck.Check(raw) {
		t.Errorf("%s: AG-UI violation: %v", name, v)
	}
	return evs
}

func eventTypes(evs []map[string]any) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i], _ = e["type"].(string)
	}
	return out
}

func countEvents(evs []map[string]any, typ string) int {
	n := 0
	for _, e := range evs {
		if e["type"] == typ {
			n++
		}
	}
	return n
}

func userMsg(text string) []any {
	return []any{map[string]any{"id": "u1", "role": "user", "content": text}}
}

func TestAGUIWithTheRealClient(t *testing.T) {
	e := newAPIEnv(t, Options{})
	optIn := map[string]any{"ruleagent": map[string]any{"subagentEvents": true}}
	confirm := []any{map[string]any{"name": "confirm", "description": "Asks the person to confirm.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}
	res := e.runAGUI(false,
		map[string]any{"name": "text", "chain": "chat", "threadId": "thread-text", "runId": "run-text", "messages": userMsg("hi there"),
			"context": []any{map[string]any{"description": "page", "value": "settings"}}, "state": map[string]any{"cart": 2}},
		map[string]any{"name": "reasoning", "chain": "chat", "messages": userMsg("please think")},
		map[string]any{"name": "server-tool", "chain": "tools", "messages": userMsg("lookup please")},
		map[string]any{"name": "front-end-tool", "chain": "tools", "messages": userMsg("confirm the order"), "tools": confirm,
			"toolResults": map[string]any{"confirm": "yes, ship it"}},
		map[string]any{"name": "subagent", "chain": "tools", "messages": userMsg("delegate this")},
		map[string]any{"name": "subagent-opt-in", "chain": "tools", "messages": userMsg("delegate this"), "forwardedProps": optIn},
		map[string]any{"name": "error", "chain": "broken", "messages": userMsg("hi")},
		map[string]any{"name": "cancel", "chain": "slow", "messages": userMsg("talk slowly"), "cancelOn": "TEXT_MESSAGE_CONTENT"},
	)

	// Plain text: threadId and runId echoed, the answer streamed, usage
	// and protocol version reported; context and state reached the chain.
	r := res["text"].Runs[0]
	evs := checkRun(t, "text", r)
	first, last := evs[0], evs[len(evs)-1]
	if first["type"] != "RUN_STARTED" || first["threadId"] != "thread-text" || first["runId"] != "run-text" || first["protocolVersion"] != "1.0" {
		t.Errorf("RUN_STARTED: %v", first)
	}
	if last["type"] != "RUN_FINISHED" || last["threadId"] != "thread-text" || last["runId"] != "run-text" || last["result"] != "Hello! You said: hi there" {
		t.Errorf("RUN_FINISHED: %v", last)
	}
	if u, _ := last["usage"].([]any); len(u) != 1 || u[0].(map[string]any)["model"] != "test-model" {
		t.Errorf("usage: %v", last["usage"])
	}
	var req = findRequest(e, "hi there")
	if req == nil || !strings.Contains(req.System(), "page: settings") {
		t.Errorf("the context did not reach the model: %v", req)
	}

	// Reasoning arrives as REASONING_* events.
	evs = checkRun(t, "reasoning", res["reasoning"].Runs[0])
	if countEvents(evs, "REASONING_MESSAGE_CONTENT") == 0 || countEvents(evs, "REASONING_START") != 1 {
		t.Errorf("reasoning: %v", eventTypes(evs))
	}

	// A server tool call: announced, run (the chain's nodes as steps),
	// answered.
	evs = checkRun(t, "server-tool", res["server-tool"].Runs[0])
	if countEvents(evs, "TOOL_CALL_START") != 1 || countEvents(evs, "TOOL_CALL_RESULT") != 1 || !strings.Contains(fmt.Sprint(evs[len(evs)-1]["result"]), `Done: {"found":"A-1"}`) {
		t.Errorf("server tool: %v / %v", eventTypes(evs), evs[len(evs)-1])
	}

	// A front-end tool: the run ends with the call pending; the client
	// answers and the next run goes on from there.
	ft := res["front-end-tool"]
	if len(ft.Runs) != 2 {
		t.Fatalf("front-end tool: %d runs: %+v", len(ft.Runs), ft.Runs)
	}
	evs = checkRun(t, "front-end-tool#1", ft.Runs[0])
	if f := ft.Runs[0].Finished; f == nil || f.Outcome != "success" || len(f.PendingToolCallIDs) != 1 {
		t.Fatalf("first run: %+v %v", f, eventTypes(evs))
	}
	if countEvents(evs, "TOOL_CALL_RESULT") != 1 {
		t.Errorf("only the server call has a result: %v", eventTypes(evs))
	}
	evs = checkRun(t, "front-end-tool#2", ft.Runs[1])
	if got := fmt.Sprint(evs[len(evs)-1]["result"]); !strings.Contains(got, "yes, ship it") || !strings.Contains(got, `{"found":"B-2"}`) {
		t.Errorf("continuation: %s", got)
	}

	// A sub-agent: attributed events always; lifecycle events only with
	// the opt-in.
	evs = checkRun(t, "subagent", res["subagent"].Runs[0])
	if countEvents(evs, "SUBAGENT_STARTED") != 0 || !hasAttributed(evs) {
		t.Errorf("sub-agent without opt-in: %v", eventTypes(evs))
	}
	evs = checkRun(t, "subagent-opt-in", res["subagent-opt-in"].Runs[0])
	if countEvents(evs, "SUBAGENT_STARTED") != 1 || countEvents(evs, "SUBAGENT_FINISHED") != 1 || !hasAttributed(evs) {
		t.Errorf("sub-agent with opt-in: %v", eventTypes(evs))
	}
	if u, _ := evs[len(evs)-1]["usage"].([]any); len(u) != 1 || u[0].(map[string]any)["inputTokens"].(float64) <= 0 {
		t.Errorf("usage with a sub-agent: %v", evs[len(evs)-1]["usage"])
	}

	// An error run ends with RUN_ERROR, with the failure's code and message.
	evs = checkRun(t, "error", res["error"].Runs[0])
	if last := evs[len(evs)-1]; last["type"] != "RUN_ERROR" || last["code"] != "llm_error" || !strings.Contains(fmt.Sprint(last["message"]), "the model refuses this request") {
		t.Errorf("error run ends with %v", last)
	}

	// A cancelled run ends with RUN_FINISHED outcome cancelled, never a
	// success, and the LLM request is aborted.
	cr := res["cancel"].Runs[0]
	evs = checkRun(t, "cancel", cr)
	if cr.Finished == nil || cr.Finished.Outcome != "cancelled" || countEvents(evs, "RUN_FINISHED")+countEvents(evs, "RUN_ERROR") != 1 {
		t.Errorf("cancelled run: %+v %v", cr.Finished, eventTypes(evs))
	}
	if !llmAborted(e, promptSlow) {
		t.Error("the LLM did not see the cancelled run's request aborted")
	}
}

func hasAttributed(evs []map[string]any) bool {
	for _, e := range evs {
		if e["type"] == "TEXT_MESSAGE_CONTENT" && e["subagentRunId"] != nil {
			return true
		}
	}
	return false
}
