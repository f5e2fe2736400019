package server

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
)

const sysMemo = "system: " + promptMemo

// A thread remembers its turns; another thread starts from nothing.
func TestSessionSameThread(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread"})})
	e.say("memo", "t1", "my name is Ada")
	ans := e.say("memo", "t1", "what is my name?")
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: my name is Ada", "assistant: Noted: my name is Ada", "user: what is my name?")
	if ans.Metadata["sessionId"] != "memo:thread:t1" {
		t.Errorf("sessionId %q", ans.Metadata["sessionId"])
	}
	e.say("memo", "t2", "hello")
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: hello")
}

// Per-user sessions never mix users; a run without the user id fails,
// naming it, rather than landing in a shared session.
func TestSessionDifferentUsers(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{
		"memo": memoChain("memo", map[string]any{"scope": "user"}),
		"pair": memoChain("pair", map[string]any{"scope": "user_thread"}),
	})
	chat := func(model, user, text string, md map[string]any) {
		t.Helper()
		body := map[string]any{"model": model, "user": user, "messages": []any{map[string]any{"role": "user", "content": text}}}
		if md != nil {
			body["metadata"] = md
		}
		status, b, _ := e.do("POST", "/v1/chat/completions", body)
		if status != 200 {
			t.Fatalf("%d %s", status, b)
		}
	}
	chat("memo", "alice", "alice likes tea", nil)
	chat("memo", "bob", "bob likes coffee", nil)
	chat("memo", "alice", "what do I like?", nil)
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: alice likes tea", "assistant: Noted: alice likes tea", "user: what do I like?")
	chat("memo", "bob", "and me?", nil)
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: bob likes coffee", "assistant: Noted: bob likes coffee", "user: and me?")

	// user_thread: one user's two threads are apart too.
	chat("pair", "alice", "thread one", map[string]any{"threadId": "t1"})
	chat("pair", "alice", "thread two", map[string]any{"threadId": "t2"})
	chat("pair", "alice", "still one?", map[string]any{"threadId": "t1"})
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: thread one", "assistant: Noted: thread one", "user: still one?")

	// No user: an error naming the input, and nothing stored anywhere.
	before := len(e.llm.Requests())
	ans := e.runOnce("memo", map[string]any{"input": "who am I?"}, "error")
	if ans.ErrorCode != "session_scope" || !strings.Contains(ans.Error, "userId") {
		t.Errorf("missing user: %s %s", ans.ErrorCode, ans.Error)
	}
	if len(e.llm.Requests()) != before {
		t.Error("a run without its scope input reached the LLM")
	}
	status, b, _ := e.do("POST", "/v1/chat/completions", map[string]any{"model": "memo", "messages": []any{map[string]any{"role": "user", "content": "hi"}}})
	if status != 400 || !strings.Contains(string(b), `"code":"session_scope"`) {
		t.Errorf("OpenAI request without user: %d %s", status, b)
	}
	list, _ := e.store.Sessions().List(t.Context(), sessions.Filter{Agent: "memo"})
	if len(list) != 2 {
		t.Errorf("sessions of memo: %+v", list)
	}
}

// The stored history holds each assistant message with its tool calls,
// each result (failures included), in order, and reaches the next turn.
func TestSessionHistoryWithToolCalls(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"tools": toolsSessionChain("tools", map[string]any{"scope": "thread"})})
	e.say("tools", "t1", "lookup A-1 please")
	e.say("tools", "t1", "now the missing one")
	e.say("tools", "t1", "thanks")
	got := conv(t, agentRequest(e, promptSessTool))
	want := []string{"system: " + promptSessTool,
		"user: lookup A-1 please", `assistant:  [lookup {"key":"A-1"}]`, `tool lookup: {"found":"A-1"}`, `assistant: Done: {"found":"A-1"}`,
		"user: now the missing one", `assistant:  [missing {}]`}
	if len(got) != 10 || strings.Join(got[:7], "\n") != strings.Join(want, "\n") ||
		!strings.HasPrefix(got[7], "tool missing: Error (not_found)") || !strings.HasPrefix(got[8], "assistant: Done: Error (not_found)") ||
		got[9] != "user: thanks" {
		t.Errorf("messages:\n  %s", strings.Join(got, "\n  "))
	}
	rec, err := e.store.Sessions().Get(t.Context(), "tools:thread:t1")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Messages[6].Error == "" || rec.Turns != 3 {
		t.Errorf("the failed call is not marked in the session: %+v", rec.Messages[6])
	}
}

// Pruning at the budget drops whole turns, never a call without its
// result.
func TestSessionPruningAtTheBudget(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{
		"tools": toolsSessionChain("tools", map[string]any{"scope": "thread", "maxHistoryMessages": 5}),
		"memo":  memoChain("memo", map[string]any{"scope": "thread", "maxHistoryTokens": 40}),
	})
	e.say("tools", "t1", "lookup A-1 please") // 4 messages
	e.say("tools", "t1", "hello")             // 2 more: 6 > 5
	e.say("tools", "t1", "and now?")
	wantConv(t, agentRequest(e, promptSessTool), "system: "+promptSessTool,
		"user: hello", "assistant: Nothing to do.", "user: and now?")

	// By tokens: each turn of this length is about 24 estimated tokens.
	e.say("memo", "t2", strings.Repeat("a", 30))
	e.say("memo", "t2", strings.Repeat("b", 30))
	e.say("memo", "t2", "last")
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"user: "+strings.Repeat("b", 30), "assistant: Noted: "+strings.Repeat("b", 30), "user: last")
}

// Compaction: over the budget, the oldest turns become one summary the
// LLM writes; the run's events and the session say so; recent turns stay.
func TestSessionCompaction(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread",
		"maxHistoryMessages": 4, "compaction": map[string]any{"keepTurns": 1}})})
	for _, s := range []string{"one", "two", "three"} {
		e.say("memo", "t1", s)
	}
	status, body, _ := e.do("POST", "/api/v1/chains/memo/run", map[string]any{"input": "four", "threadId": "t1", "stream": true})
	if status != 200 {
		t.Fatal(status)
	}
	wantConv(t, agentRequest(e, promptMemo), sysMemo,
		"system: "+sessions.SummaryPrefix+"The user said: one; two", "user: three", "assistant: Noted: three", "user: four")
	var compacted map[string]any
	for _, ev := range sseEvents(t, body) {
		var m map[string]any
		_ = json.Unmarshal(ev, &m)
		if m["type"] == "CUSTOM" && m["name"] == sessions.EventCompacted {
			compacted, _ = m["value"].(map[string]any)
		}
	}
	if compacted == nil || compacted["messages"] != float64(4) || compacted["turns"] != float64(2) || compacted["summary"] != "The user said: one; two" {
		t.Errorf("compaction event: %v", compacted)
	}
	status, b, _ := e.do("GET", "/api/v1/sessions/memo:thread:t1", nil)
	var rec sessions.Record
	_ = json.Unmarshal(b, &rec)
	if status != 200 || rec.Summary != "The user said: one; two" || len(rec.Compactions) != 1 || rec.Compactions[0].Messages != 4 ||
		len(rec.Messages) != 4 || rec.Messages[0].Content != "three" {
		t.Errorf("session after compaction: %d %s", status, b)
	}
}

// A compaction the LLM fails: the run goes on with the oldest turns
// pruned instead, and a warning event says so.
func TestSessionCompactionFailureFallsBackToPruning(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread",
		"maxHistoryMessages": 4, "compaction": map[string]any{"keepTurns": 1, "prompt": promptNoCompaction}})})
	for _, s := range []string{"one", "two", "three"} {
		e.say("memo", "t1", s)
	}
	status, body, _ := e.do("POST", "/api/v1/chains/memo/run", map[string]any{"input": "four", "threadId": "t1", "stream": true})
	if status != 200 {
		t.Fatal(status)
	}
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: two", "assistant: Noted: two", "user: three", "assistant: Noted: three", "user: four")
	warned := false
	for _, ev := range sseEvents(t, body) {
		var m map[string]any
		_ = json.Unmarshal(ev, &m)
		if v, _ := m["value"].(map[string]any); m["name"] == sessions.EventWarning && strings.Contains(fmt.Sprint(v["message"]), "compaction failed") {
			warned = true
		}
		if m["type"] == "RUN_ERROR" {
			t.Errorf("the run failed: %v", m)
		}
	}
	if !warned {
		t.Error("no warning event for the failed compaction")
	}
}

// Each memory policy decides what of a run the next turn sees.
func TestSessionMemoryPolicies(t *testing.T) {
	bigResult := strings.Repeat("R", 3000)
	cases := []struct {
		memory string
		want   []string
	}{
		{"full", []string{"user: big data please", "assistant:  [big {}]", "tool big: " + bigResult, "assistant: Done: " + bigResult}},
		{"final", []string{"user: big data please", "assistant: Done: " + bigResult}},
		{"tool_summaries", []string{"user: big data please", "assistant:  [big {}]",
			"tool big: [Summary of a 3000-character tool result, for the history]\nshort result of big", "assistant: Done: " + bigResult}},
	}
	for _, c := range cases {
		t.Run(c.memory, func(t *testing.T) {
			e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"tools": toolsSessionChain("tools",
				map[string]any{"scope": "thread", "memory": c.memory, "toolResultLimit": 100})})
			e.say("tools", "t1", "big data please")
			e.say("tools", "t1", "and then?")
			want := append([]string{"system: " + promptSessTool}, c.want...)
			wantConv(t, agentRequest(e, promptSessTool), append(want, "user: and then?")...)
		})
	}
}

// Two runs on one session at once: the second is refused, never
// interleaved; the first goes on and is kept.
func TestSessionConcurrentRunsAreRefused(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread"})})
	var wg sync.WaitGroup
	wg.Add(1)
	var first runAnswer
	go func() {
		defer wg.Done()
		first = e.runOnce("memo", map[string]any{"input": "hang on", "threadId": "t1", "runId": "run-hang"}, "cancelled")
	}()
	waitRequest(e, "hang on")
	ans := e.runOnce("memo", map[string]any{"input": "me too", "threadId": "t1"}, "error")
	if ans.ErrorCode != "session_busy" {
		t.Errorf("second run: %s %s", ans.ErrorCode, ans.Error)
	}
	if st, _, _ := e.do("DELETE", "/api/v1/sessions/memo:thread:t1", nil); st != 409 {
		t.Errorf("DELETE during a run: %d", st)
	}
	e.do("POST", "/api/v1/runs/run-hang/cancel", nil)
	wg.Wait()
	_ = first
	// The cancelled run kept nothing; the session is free again.
	e.say("memo", "t1", "after")
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: after")
}

// OpenAI clients send the whole conversation, seeing only the answer
// (with the agent's tool activity as text) and the calls of their own
// tools: nothing is stored twice, and a pending front-end call is
// completed by the result the client sends, or answered as unanswered
// when the client moves on.
func TestSessionOpenAIHistoryAndFrontEndTools(t *testing.T) {
	e := newSessionEnv(t, sessions.NewMemory(), map[string]string{"tools": toolsSessionChain("tools", map[string]any{"scope": "thread"})})
	confirm := []any{map[string]any{"type": "function", "function": map[string]any{"name": "confirm", "description": "Asks the person.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}}
	type oaiMsg = map[string]any
	chat := func(thread string, msgs []any, tools []any) oaiMsg {
		t.Helper()
		body := map[string]any{"model": "tools", "messages": msgs, "metadata": map[string]any{"threadId": thread}}
		if tools != nil {
			body["tools"] = tools
		}
		status, b, _ := e.do("POST", "/v1/chat/completions", body)
		var out struct{ Choices []struct{ Message oaiMsg } }
		if err := json.Unmarshal(b, &out); err != nil || status != 200 || len(out.Choices) != 1 {
			t.Fatalf("%d %s", status, b)
		}
		return out.Choices[0].Message
	}
	sys := "system: " + promptSessTool
	u1 := oaiMsg{"role": "user", "content": "lookup please"}
	a1 := chat("t1", []any{u1}, nil)
	if !strings.Contains(a1["content"].(string), "lookup") || !strings.HasSuffix(a1["content"].(string), `Done: {"found":"A-1"}`) {
		t.Fatalf("first answer: %v", a1)
	}
	u2 := oaiMsg{"role": "user", "content": "confirm the order"}
	a2 := chat("t1", []any{oaiMsg{"role": "system", "content": "Be brief."}, u1, a1, u2}, confirm)
	calls, _ := a2["tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("second answer: %v", a2)
	}
	callID := calls[0].(map[string]any)["id"].(string)
	wantConv(t, agentRequest(e, promptSessTool), sys, "system: Be brief.",
		"user: lookup please", `assistant:  [lookup {"key":"A-1"}]`, `tool lookup: {"found":"A-1"}`, `assistant: Done: {"found":"A-1"}`,
		"user: confirm the order")
	chat("t1", []any{u1, a1, u2, a2, oaiMsg{"role": "tool", "tool_call_id": callID, "content": "yes, ship it"}}, confirm)
	wantConv(t, agentRequest(e, promptSessTool), sys,
		"user: lookup please", `assistant:  [lookup {"key":"A-1"}]`, `tool lookup: {"found":"A-1"}`, `assistant: Done: {"found":"A-1"}`,
		"user: confirm the order", `assistant:  [lookup {"key":"B-2"}] [confirm {"question":"Ship it?"}]`, `tool lookup: {"found":"B-2"}`,
		"tool confirm: yes, ship it")

	// A client that sends only its new message and gives up on the call.
	chat("t2", []any{u2}, confirm)
	chat("t2", []any{oaiMsg{"role": "user", "content": "never mind"}}, nil)
	wantConv(t, agentRequest(e, promptSessTool), sys,
		"user: confirm the order", `assistant:  [lookup {"key":"B-2"}] [confirm {"question":"Ship it?"}]`, `tool lookup: {"found":"B-2"}`,
		"tool confirm: "+sessions.Unanswered, "user: never mind")

	// An edited history (the client dropped the last exchange and asks
	// again) replaces the stored one instead of piling onto it.
	chat("t1", []any{u1, a1, oaiMsg{"role": "user", "content": "something else"}}, nil)
	wantConv(t, agentRequest(e, promptSessTool), sys,
		"user: lookup please", "assistant: "+a1["content"].(string), "user: something else")
}

// The embedded store keeps sessions across a server restart.
func TestSessionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	chains := map[string]string{"memo": memoChain("memo", map[string]any{"scope": "thread"})}
	llm := llmtest.NewServer(t, sessionScript())
	open := func() *sessions.Bolt {
		st, err := sessions.OpenBolt(filepath.Join(dir, sessions.BoltFile))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	e := newSessionEnvLLM(t, st, chains, llm)
	e.say("memo", "t1", "remember 42")
	e.store.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = open()
	t.Cleanup(func() { st.Close() })
	e = newSessionEnvLLM(t, st, chains, llm)
	e.say("memo", "t1", "what number?")
	wantConv(t, agentRequest(e, promptMemo), sysMemo, "user: remember 42", "assistant: Noted: remember 42", "user: what number?")
}
