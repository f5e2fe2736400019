package server

import (
	"encoding/json"
	"testing"

	"github.com/ruleagent/ruleagent/sessions"
)

func aguiUser(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

// AG-UI runs with a threadId, driven by the real @ag-ui/client: a client
// that sends only its new message gets the stored history; one that sends
// the whole history (as HttpAgent does) gets it once, front-end tool
// calls and their results included.
func TestSessionAGUIWithAndWithoutFullHistory(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{
		"memo":  memoChain("memo", map[string]any{"scope": "thread"}),
		"tools": toolsSessionChain("tools", map[string]any{"scope": "thread"}),
	})
	confirm := []any{map[string]any{"name": "confirm", "description": "Asks the person to confirm.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}

	// Only the new message, from two separate clients on one thread.
	res := e.runAGUI(false,
		map[string]any{"name": "first", "chain": "memo", "threadId": "ag-1", "messages": []any{aguiUser("m1", "my name is Ada")}},
		map[string]any{"name": "second", "chain": "memo", "threadId": "ag-1", "messages": []any{aguiUser("m2", "what is my name?")}},
	)
	for _, name := range []string{"first", "second"} {
		checkRun(t, name, res[name].Runs[0])
	}
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: my name is Ada", "assistant: Noted: my name is Ada", "user: what is my name?")

	// The whole history, as the client keeps it.
	res = e.runAGUI(false, map[string]any{"name": "first", "chain": "memo", "threadId": "ag-2", "messages": []any{aguiUser("m1", "I am Bo")}})
	checkRun(t, "full first", res["first"].Runs[0])
	history := append(rawList(res["first"].Messages), aguiUser("m2", "who am I?"))
	res = e.runAGUI(false, map[string]any{"name": "again", "chain": "memo", "threadId": "ag-2", "messages": history})
	checkRun(t, "full again", res["again"].Runs[0])
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: I am Bo", "assistant: Noted: I am Bo", "user: who am I?")

	// A front-end tool: the run ends pending, the client answers and runs
	// again with its whole history, then goes on.
	res = e.runAGUI(false, map[string]any{"name": "tool", "chain": "tools", "threadId": "ag-3", "messages": []any{aguiUser("m1", "confirm the order")},
		"tools": confirm, "toolResults": map[string]any{"confirm": "yes, ship it"}})
	runs := res["tool"].Runs
	if len(runs) != 2 || len(runs[0].Finished.PendingToolCallIDs) != 1 {
		t.Fatalf("front-end tool runs: %+v", runs)
	}
	for _, r := range runs {
		checkRun(t, "tool", r)
	}
	sys := "system: " + promptSessTool
	toolTurn := []string{sys, "user: confirm the order", `assistant:  [lookup {"key":"B-2"}] [confirm {"question":"Ship it?"}]`,
		`tool lookup: {"found":"B-2"}`, "tool confirm: yes, ship it"}
	wantConv(t, agentRequest(e, promptSessTool), toolTurn...)
	history = append(rawList(res["tool"].Messages), aguiUser("m9", "thanks"))
	res = e.runAGUI(false, map[string]any{"name": "after", "chain": "tools", "threadId": "ag-3", "messages": history, "tools": confirm})
	checkRun(t, "after", res["after"].Runs[0])
	wantConv(t, agentRequest(e, promptSessTool), append(toolTurn,
		`assistant: Done: {"found":"B-2"} | yes, ship it`, "user: thanks")...)
}

func rawList(msgs []json.RawMessage) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		var v any
		_ = json.Unmarshal(m, &v)
		out[i] = v
	}
	return out
}
