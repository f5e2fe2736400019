package components

import (
	"context"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// agentChainDef is an agent chain whose system prompt names it, so one
// scripted server can answer each agent by its prompt.
func agentChainDef(id, name, description, url string, tools ...any) map[string]any {
	info := map[string]any{"description": description}
	return chain(id, name, info, []map[string]any{agentNode(url, "I am "+id+".", map[string]any{"tools": tools, "maxDepth": 2})})
}

func agentTool(target string) map[string]any {
	return map[string]any{"type": "agent", "targetId": target}
}

func TestSubAgentNestedEvents(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am reviewer."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if r.Turn() == 0 {
				return llmtest.Response{Reasoning: "Check the arithmetic first.", ToolCalls: []llmtest.ToolCall{llmtest.Call("test_add", `{"a":2,"b":2}`)}}
			}
			return llmtest.Reply("LGTM: 2+2 is 4. Reviewed: " + r.Messages[1].Content)
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am orchestrator."), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("Code_Reviewer", `{"message":"please review: x := 2+2"}`)),
			llmtest.Reply("The reviewer approved."),
		)},
	))
	p := pool(t)
	deploy(t, p, agentChainDef("reviewer", "Code Reviewer", "Reviews code changes.", srv.URL, map[string]any{"type": "builtin", "name": "test_add"}))
	orch := deploy(t, p, agentChainDef("orchestrator", "Orchestrator", "", srv.URL, agentTool("reviewer")))
	r := send(t, context.Background(), orch, "review my change", nil, true)
	if end := oneTerminal(t, r, types.Success); end.msg.GetData() != "The reviewer approved." {
		t.Fatalf("answer %q", end.msg.GetData())
	}
	// The tool took its name and description from the target chain.
	tl := srv.Requests()[0].Tools
	if len(tl) != 1 || tl[0].Name != "Code_Reviewer" || tl[0].Description != "Reviews code changes." || !strings.Contains(string(tl[0].Parameters), `"message"`) {
		t.Fatalf("tool offered: %+v", tl)
	}
	// The sub-agent got the message.
	result := srv.Requests()[len(srv.Requests())-1].ToolResults()[0].Content
	if result != "LGTM: 2+2 is 4. Reviewed: please review: x := 2+2" {
		t.Fatalf("sub-agent result %q", result)
	}
	checkEvents(t, &r.rec)
	var callID, subID string
	var nested, nestedTools int
	for _, e := range r.rec.Events() {
		switch {
		case e.Type == events.ToolCallStart && e.SubagentRunID == "":
			callID = e.ToolCallID
		case e.Type == events.SubagentStarted:
			subID = e.SubagentRunID
			if e.ParentToolCallID != callID || e.Name != "Code Reviewer" || e.Description != "Reviews code changes." {
				t.Fatalf("SUBAGENT_STARTED %+v (call %s)", e, callID)
			}
		case e.Type == events.SubagentFinished:
			if e.SubagentRunID != subID || !strings.Contains(string(e.Result), "LGTM") {
				t.Fatalf("SUBAGENT_FINISHED %+v", e)
			}
		case e.SubagentRunID != "":
			if e.SubagentRunID != subID {
				t.Fatalf("nested event with another id: %+v", e)
			}
			nested++
			if e.Type == events.ToolCallResult {
				nestedTools++
			}
		}
	}
	if subID == "" || nested < 8 || nestedTools != 1 {
		t.Fatalf("nested events: sub %q, %d events, %d tool results", subID, nested, nestedTools)
	}
}

func TestSubAgentAcceptsMessageAndMessages(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am echo."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			return llmtest.Reply("turns " + itoa(len(r.Messages)) + ": " + r.LastUserText())
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am boss."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply(res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("Echo", strings.TrimPrefix(r.LastUserText(), "call with ")))
		})},
	))
	p := pool(t)
	deploy(t, p, agentChainDef("echo", "Echo", "Echoes.", srv.URL))
	boss := deploy(t, p, agentChainDef("boss", "Boss", "", srv.URL, agentTool("echo")))
	for args, want := range map[string]string{
		`{"message":"one"}`: "turns 2: one",
		`{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"two"}]}`: "turns 4: two",
	} {
		r := send(t, context.Background(), boss, "call with "+args, nil, false)
		if end := oneTerminal(t, r, types.Success); end.msg.GetData() != want {
			t.Fatalf("%s: %q", args, end.msg.GetData())
		}
	}
}

func TestSubAgentFilledRegardlessOfLoadOrder(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("ok")))
	p := pool(t)
	// The caller is deployed first: its target does not exist yet.
	caller := deploy(t, p, agentChainDef("early", "Early", "", srv.URL, agentTool("late-agent")))
	send(t, context.Background(), caller, "hi", nil, false)
	tl := srv.LastRequest().Tools
	if len(tl) != 1 || tl[0].Name != "late-agent" || !strings.Contains(tl[0].Description, "not deployed yet") {
		t.Fatalf("before the target loads: %+v", tl)
	}
	deploy(t, p, agentChainDef("late-agent", "Late Helper", "Helps late.", srv.URL))
	send(t, context.Background(), caller, "hi", nil, false)
	if tl := srv.LastRequest().Tools; tl[0].Name != "Late_Helper" || tl[0].Description != "Helps late." {
		t.Fatalf("after the target loads: %+v", tl)
	}
	// Redeployed with a new description: refreshed on the next run.
	e, _ := p.Get("late-agent")
	dsl := strings.Replace(string(e.DSL()), "Helps late.", "Helps later, better.", 1)
	if err := e.ReloadSelf([]byte(dsl)); err != nil {
		t.Fatal(err)
	}
	send(t, context.Background(), caller, "hi", nil, false)
	if tl := srv.LastRequest().Tools; tl[0].Description != "Helps later, better." {
		t.Fatalf("after the redeploy: %+v", tl)
	}
}

func TestSubAgentCycleAndDepthRefused(t *testing.T) {
	// a -> b -> a is a cycle; c1 -> c2 -> c3 -> c4 passes maxDepth 2.
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply("done: " + res[0].Content)
		}
		if len(r.Tools) == 0 {
			return llmtest.Reply("leaf")
		}
		return llmtest.Calls(llmtest.Call(r.Tools[0].Name, `{"message":"go on"}`))
	}))
	p := pool(t)
	a := deploy(t, p, agentChainDef("a", "A", "", srv.URL, agentTool("b")))
	deploy(t, p, agentChainDef("b", "B", "", srv.URL, agentTool("a")))
	r := send(t, context.Background(), a, "start", nil, true)
	got := oneTerminal(t, r, types.Success).msg.GetData()
	if !strings.Contains(got, "would make a cycle (a -> b -> a)") || !strings.Contains(got, "permission_denied") {
		t.Fatalf("cycle: %q", got)
	}
	checkEvents(t, &r.rec)

	c1 := deploy(t, p, agentChainDef("c1", "C1", "", srv.URL, agentTool("c2")))
	deploy(t, p, agentChainDef("c2", "C2", "", srv.URL, agentTool("c3")))
	deploy(t, p, agentChainDef("c3", "C3", "", srv.URL, agentTool("c4")))
	deploy(t, p, agentChainDef("c4", "C4", "", srv.URL))
	r = send(t, context.Background(), c1, "start", nil, true)
	got = oneTerminal(t, r, types.Success).msg.GetData()
	if !strings.Contains(got, "over the limit of 2") || strings.Contains(got, "leaf") {
		t.Fatalf("depth: %q", got)
	}
	checkEvents(t, &r.rec)
}
