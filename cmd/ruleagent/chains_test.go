package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/server"
)

// TestOrchestratorShowsNestedSubAgents runs chains/orchestrator.json the way
// a user would: the two specialists answer as sub-agents, and the terminal
// shows their work indented under the tool call that started them.
func TestOrchestratorShowsNestedSubAgents(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("careful code reviewer"), Script: llmtest.Always(llmtest.Reply("Bug: the loop skips the last element."))},
		llmtest.Rule{Match: llmtest.SystemContains("You summarize texts"), Script: llmtest.Always(llmtest.Reply("- Adds a retry loop\n- Fixes the timeout"))},
		llmtest.Rule{Match: llmtest.SystemContains("You lead a small team"), Script: llmtest.Sequence(
			llmtest.Calls(llmtest.Call("Code_Reviewer", `{"message":"Review: for i := 0; i < n-1; i++ {}"}`), llmtest.Call("Summarizer", `{"message":"Summarize the change notes."}`)),
			llmtest.Reply("Review found one bug; summary attached."),
		)},
	))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("orchestrator.json"), "--input", "Review and summarize my change."}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errb.String(), out.String())
	}
	s := out.String()
	for _, want := range []string{
		"→ Code_Reviewer", "→ Summarizer",
		"    ↳ sub-agent Code Reviewer", "    ↳ sub-agent Summarizer",
		"    Code Reviewer ▸ Bug: the loop skips the last element.",
		"i < n-1",
		"✓ Code_Reviewer", "Review found one bug; summary attached.",
	} {
		if !strings.Contains(s, want) {
			t.Fatalf("terminal output lacks %q:\n%s", want, s)
		}
	}
}

func TestSupportAgentUsesTheOrderChain(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply("Tool said: " + res[0].Content)
		}
		return llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-1001","userId":"bob"}`))
	}))
	setLLM(t, srv.URL)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", repoChain("support-agent.json"), "--input", "Where is A-1001?", "--meta", "userId=alice"}, nil, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), `"status":"shipped"`) || !strings.Contains(out.String(), "  · Find the order") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	// The model's userId ("bob") was overridden by the binding: bob would not own A-1001.
	if strings.Contains(out.String(), "No order") {
		t.Fatalf("the model's userId was used:\n%s", out.String())
	}
}

func TestOrderStatusChain(t *testing.T) {
	store, errs := server.OpenStore(repoChain(""), server.NewConfig(nil))
	defer store.Close()
	for _, e := range errs {
		t.Fatal(e)
	}
	cases := map[string]string{
		`{"orderId":"A-1001","userId":"alice"}`: `"status":"shipped"`,
		`{"orderId":"A-1001","userId":"bob"}`:   `No order A-1001`,
		`{"orderId":"Z-9999","userId":"bob"}`:   `No order Z-9999`,
		`{"orderId":"1001","userId":"alice"}`:   `look like A-1001`,
	}
	for in, want := range cases {
		res, err := store.RunChain(context.Background(), "order-status", in, nil, nil)
		if err != nil || !strings.Contains(res.Msg.GetData(), want) {
			t.Fatalf("%s: %q %v", in, res.Msg.GetData(), err)
		}
	}
}
