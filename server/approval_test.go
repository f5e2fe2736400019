package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Human approval through the real AG-UI client: the run pauses with an
// interrupt; the person approves with edited arguments, denies with a
// reason the model reads, or answers a form whose answer is the result.
func TestApprovalThroughAGUI(t *testing.T) {
	e := newAPIEnv(t, Options{})
	res := e.runAGUI(false,
		map[string]any{"name": "edit", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"approved": true, "arguments": map[string]any{"key": "EDITED-7"}}}},
		map[string]any{"name": "deny", "chain": "guarded", "messages": userMsg("lookup something"),
			"answers": map[string]any{"lookup": map[string]any{"approved": false, "reason": "not on a Friday"}}},
		map[string]any{"name": "form", "chain": "guarded", "messages": userMsg("ask me"),
			"answers": map[string]any{"ask_person": map[string]any{"size": "M"}}},
	)
	for _, tc := range []struct{ name, reason, want string }{
		{"edit", "tool_approval", `Result: {"found":"EDITED-7"}`},
		{"deny", "tool_approval", "not on a Friday"},
		{"form", "form", `Result: {"size":"M"}`},
	} {
		r := res[tc.name]
		if len(r.Runs) != 2 {
			t.Fatalf("%s: %d runs: %+v", tc.name, len(r.Runs), r.Runs)
		}
		first := checkRun(t, tc.name+"#1", r.Runs[0])
		last := first[len(first)-1]
		out, _ := last["outcome"].(map[string]any)
		ins, _ := out["interrupts"].([]any)
		if r.Runs[0].Finished == nil || r.Runs[0].Finished.Outcome != "interrupt" || len(ins) != 1 {
			t.Fatalf("%s: the first run did not pause: %v", tc.name, last)
		}
		in := ins[0].(map[string]any)
		if in["reason"] != tc.reason || in["toolCallId"] == nil || in["expiresAt"] == nil || in["responseSchema"] == nil {
			t.Errorf("%s: interrupt %v", tc.name, in)
		}
		second := checkRun(t, tc.name+"#2", r.Runs[1])
		if got := fmt.Sprint(second[len(second)-1]["result"]); !strings.Contains(got, tc.want) {
			t.Errorf("%s: the resumed run ended with %q, want %q", tc.name, got, tc.want)
		}
	}
	// The denied call never ran; the model read the reason.
	if req := findToolResult(e, "not on a Friday"); req == "" || !strings.Contains(req, "approval_denied") {
		t.Errorf("the model did not read the denial: %q", req)
	}
}

func findToolResult(e *apiEnv, s string) string {
	for _, r := range e.llm.Requests() {
		for _, m := range r.ToolResults() {
			if strings.Contains(m.Content, s) {
				return m.Content
			}
		}
	}
	return ""
}

// The same through the run route and POST /api/v1/runs/{id}/resume; an
// incomplete or stale answer is refused; no answer within the timeout
// means deny.
func TestApprovalThroughTheRunRoute(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "threadId": "t-guard"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" || len(ans.Interrupts) != 1 {
		t.Fatalf("run: %d %s", code, body)
	}
	in := ans.Interrupts[0]
	// Listed as waiting.
	_, list, _ := e.do("GET", "/api/v1/runs", nil)
	if !strings.Contains(string(list), `"status":"waiting"`) || !strings.Contains(string(list), in.ID) {
		t.Fatalf("runs: %s", list)
	}
	// New AG-UI input on the thread is refused while it waits.
	if code, body, _ := e.do("POST", "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-guard", "runId": "r2", "messages": userMsg("hi")}); code != 409 {
		t.Fatalf("new input while waiting: %d %s", code, body)
	}
	// A bad payload is refused, and the interrupt stays open.
	if code, body, _ := e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": []any{map[string]any{"interruptId": in.ID, "status": "resolved", "payload": map[string]any{"yes": 1}}}}); code != 409 || !strings.Contains(string(body), "approved") {
		t.Fatalf("bad payload: %d %s", code, body)
	}
	code, body, _ = e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": []any{map[string]any{"interruptId": in.ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "success" || !strings.Contains(ans.Data, `{"found":"A-1"}`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	// A replay: the interrupt is answered, the run over.
	if code, _, _ := e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": []any{map[string]any{"interruptId": in.ID, "status": "resolved", "payload": map[string]any{"approved": true}}}}); code != 409 {
		t.Fatalf("replay: %d", code)
	}

	// Nobody answers: denied at the timeout (3s), the run goes on without
	// a client, and a late answer is refused.
	code, body, _ = e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup again"})
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	// The paused run is a checkpoint, not a run in progress.
	if n := e.store.runs.Active(); n != 0 {
		t.Fatalf("%d runs in progress while the run is paused", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for findToolResult(e, "nobody answered within 3s") == "" || e.store.runs.Active() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the unanswered run did not go on with the timeout's denial, or did not end")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if list, _ := e.store.checkpoints.List(t.Context()); len(list) != 0 {
		t.Fatalf("checkpoints left: %+v", list)
	}
	if code, _, _ := e.do("POST", "/api/v1/runs/"+ans.RunID+"/resume", map[string]any{"resume": []any{map[string]any{"interruptId": ans.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}}); code != 409 {
		t.Fatalf("a late answer: %d", code)
	}
}

// Clients that cannot answer (OpenAI) get the call refused, with why.
func TestApprovalRefusedWithoutAnApprover(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/v1/chat/completions", map[string]any{"model": "guarded", "tool_activity": false,
		"messages": []any{map[string]any{"role": "user", "content": "lookup"}}})
	if code != 200 || !strings.Contains(string(body), "needs a person") {
		t.Fatalf("%d %s", code, body)
	}
}

// AG-UI: resume entries for interrupts the server does not wait on answer
// nothing; the input runs as new input, with a warning.
func TestAGUIResumeWithUnknownInterrupt(t *testing.T) {
	e := newAPIEnv(t, Options{})
	code, body, _ := e.do("POST", "/api/v1/chains/chat/agui", map[string]any{"threadId": "t", "runId": "r", "messages": userMsg("hello"),
		"resume": []any{map[string]any{"interruptId": "int-gone", "status": "cancelled"}}})
	evs := sseEvents(t, body)
	if code != 200 || !strings.Contains(string(evs[1]), `"name":"ruleagent.warning"`) || !strings.Contains(string(evs[1]), "int-gone") ||
		!strings.Contains(string(evs[len(evs)-1]), `"result":"Hello! You said: hello"`) {
		t.Fatalf("%d %s", code, body)
	}
}

// Approval by parsed command: a bash call is judged on the commands it
// would run; "always" approves that exact command for the thread, and a
// different command needs approval again.
func TestApprovalOfShellCommands(t *testing.T) {
	e := newAPIEnv(t, Options{})
	dsl, _ := json.Marshal(map[string]any{"ruleChain": map[string]any{"id": "shell"}, "metadata": map[string]any{"nodes": []any{
		agentNode(promptShell, map[string]any{"approval": map[string]any{"commands": []any{"echo"}},
			"tools": []any{map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"workDir": t.TempDir()}}}})}}})
	if code, body, _ := e.do("PUT", "/api/v1/chains/shell", dsl); code != 200 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	resume := func(runID string, in runAnswer, payload map[string]any) runAnswer {
		t.Helper()
		code, body, _ := e.do("POST", "/api/v1/runs/"+runID+"/resume", map[string]any{"resume": []any{
			map[string]any{"interruptId": in.Interrupts[0].ID, "status": "resolved", "payload": payload}}})
		var ans runAnswer
		if code != 200 || json.Unmarshal(body, &ans) != nil {
			t.Fatalf("resume: %d %s", code, body)
		}
		return ans
	}
	code, body, _ := e.do("POST", "/api/v1/chains/shell/run", map[string]any{"input": "go", "threadId": "t-shell"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	runID := ans.RunID
	if md := string(ans.Interrupts[0].Metadata); !strings.Contains(md, `"commands":["echo hello"]`) {
		t.Fatalf("first interrupt: %s", md)
	}
	// Approved always: the same command later runs without asking; another
	// command asks again.
	ans = resume(runID, ans, map[string]any{"approved": true, "always": true})
	if ans.Outcome != "interrupt" || !strings.Contains(string(ans.Interrupts[0].Metadata), `"commands":["echo other"]`) {
		t.Fatalf("after always: %+v", ans)
	}
	ans = resume(runID, ans, map[string]any{"approved": true})
	if ans.Outcome != "success" || !strings.Contains(ans.Data, "other") {
		t.Fatalf("end: %+v", ans)
	}
	var outputs int
	for _, r := range e.llm.Requests() {
		for _, m := range r.ToolResults() {
			if strings.Contains(m.Content, "hello") {
				outputs++
			}
		}
	}
	if outputs == 0 {
		t.Fatal("the approved commands did not run")
	}
}
