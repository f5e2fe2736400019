package components

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

const orderScript = `return {msg: {orderId: msg.orderId, status: "shipped", user: msg.userId, tenant: msg.tenant, caller: metadata.userId, leaked: metadata.secretNote || ""}, metadata: metadata, msgType: msgType};`

func orderChain() map[string]any {
	return chain("order-status", "Order status", nil,
		[]map[string]any{
			{"id": "mark", "type": "test/mark", "name": "Record the request"},
			jsNode("lookup", "Look up the order", orderScript),
		},
		[3]string{"mark", "lookup", "Success"})
}

func TestRuleChainToolWithBinding(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("get_order_status", `{"orderId":"A-7","userId":"mallory"}`)),
		llmtest.Reply("Your order A-7 has shipped."),
	))
	p := pool(t)
	deploy(t, p, orderChain())
	parent := deploy(t, p, chain("support", "Support", nil, []map[string]any{agentNode(srv.URL, "You help customers.", map[string]any{
		"tools": []any{map[string]any{"type": "rulechain", "name": "get_order_status", "description": "Status of an order.", "targetId": "order-status",
			"parameters": `{"type":"object","properties":{"orderId":{"type":"string"},"userId":{"type":"string"},"tenant":{"type":"string"}},"required":["orderId","userId"]}`,
			"bind":       map[string]any{"userId": "metadata.userId", "tenant": "const:acme"}}},
	})}))
	r := send(t, context.Background(), parent, "Where is my order A-7?", map[string]string{"userId": "alice", "secretNote": "internal"}, true)
	if end := oneTerminal(t, r, types.Success); end.msg.GetData() != "Your order A-7 has shipped." {
		t.Fatalf("answer %q", end.msg.GetData())
	}
	// The bound parameters are hidden from the model...
	tools := srv.Requests()[0].Tools
	if len(tools) != 1 || strings.Contains(string(tools[0].Parameters), "userId") || strings.Contains(string(tools[0].Parameters), "tenant") ||
		!strings.Contains(string(tools[0].Parameters), "orderId") {
		t.Fatalf("schema sent to the model: %s", tools[0].Parameters)
	}
	// ...and filled in from the run, overriding what the model sent.
	got := marked("order-status")
	var data map[string]any
	_ = json.Unmarshal([]byte(got[len(got)-1].GetData()), &data)
	if data["userId"] != "alice" || data["tenant"] != "acme" || data["orderId"] != "A-7" {
		t.Fatalf("target chain got %v", data)
	}
	md := got[len(got)-1].Metadata
	if md.GetValue("userId") != "alice" || md.GetValue("secretNote") != "" || md.GetValue("parentToolCallId") == "" || md.GetValue("parentRunId") == "" {
		t.Fatalf("metadata propagated: %v", md.Values())
	}
	result := srv.Requests()[1].ToolResults()[0].Content
	if !strings.Contains(result, `"status":"shipped"`) || !strings.Contains(result, `"user":"alice"`) || !strings.Contains(result, `"leaked":""`) {
		t.Fatalf("tool result %s", result)
	}
	// The chain's nodes show as steps inside the tool call, in order.
	checkEvents(t, &r.rec)
	var steps []string
	var callID string
	for _, e := range r.rec.Events() {
		if e.Type == events.ToolCallStart {
			callID = e.ToolCallID
		}
		if (e.Type == events.StepStarted || e.Type == events.StepFinished) && e.Meta.NodeID != "" {
			if e.Meta.ToolCallID != callID || e.Meta.ChainID != "order-status" {
				t.Fatalf("step not attributed to the call: %+v", e)
			}
			steps = append(steps, string(e.Type)+" "+e.StepName)
		}
	}
	want := "STEP_STARTED Record the request,STEP_FINISHED Record the request,STEP_STARTED Look up the order,STEP_FINISHED Look up the order"
	if strings.Join(steps, ",") != want {
		t.Fatalf("steps %v", steps)
	}
}

func TestRuleChainToolFailuresAndTimeouts(t *testing.T) {
	p := pool(t)
	deploy(t, p, chain("fails", "Fails", nil, []map[string]any{jsNode("boom", "Boom", `throw new Error("inventory service down");`)}))
	deploy(t, p, chain("slow", "Slow", nil, []map[string]any{
		{"id": "wait", "type": "delay", "name": "Wait", "configuration": map[string]any{"delayMs": 600}},
		{"id": "after", "type": "test/mark", "name": "After the wait"},
	}, [3]string{"wait", "after", "Success"}))
	deploy(t, p, chain("two-ends", "Two ends", nil, []map[string]any{
		{"id": "split", "type": "fork", "name": "Split"},
		jsNode("first", "First", `return {msg: "first", metadata: metadata, msgType: msgType};`),
		jsNode("second", "Second", `return {msg: "second", metadata: metadata, msgType: msgType};`),
	}, [3]string{"split", "second", "Success"}, [3]string{"split", "first", "Success"}))

	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			return llmtest.Reply("result: " + res[0].Content)
		}
		return llmtest.Calls(llmtest.Call(r.LastUserText(), `{}`))
	}))
	tool := func(name, target string, timeout any) map[string]any {
		return map[string]any{"type": "rulechain", "name": name, "targetId": target, "timeout": timeout}
	}
	parent := deploy(t, p, chain("caller", "Caller", nil, []map[string]any{agentNode(srv.URL, "x", map[string]any{
		"tools": []any{tool("fails", "fails", 0), tool("slow", "slow", 150), tool("slow_ok", "slow", "5s"), tool("missing", "no-such-chain", 0), tool("two_ends", "two-ends", 0)},
	})}))
	ask := func(name string) (string, time.Duration) {
		start := time.Now()
		r := send(t, context.Background(), parent, name, nil, true)
		checkEvents(t, &r.rec)
		took := time.Since(start)
		end := oneTerminal(t, r, types.Success)
		return end.msg.GetData(), took
	}

	if got, _ := ask("fails"); !strings.Contains(got, "execution_failed") || !strings.Contains(got, "inventory service down") {
		t.Fatalf("failure inside the target: %q", got)
	}
	got, took := ask("slow")
	if !strings.Contains(got, "timeout") {
		t.Fatalf("timeout: %q", got)
	}
	time.Sleep(900 * time.Millisecond) // past the delay: the chain would have gone on by now
	if len(marked("slow")) != 0 {
		t.Fatal("the timed-out chain kept running: its next node ran")
	}
	// Not a timing figure: a bound far from the 150ms timeout and the 5s
	// cancel grace that only a hang would cross.
	if took > 30*time.Second {
		t.Fatalf("the timed-out call took %v", took)
	}
	// Control: with time to finish, the same chain does reach that node.
	if got, _ := ask("slow_ok"); len(marked("slow")) != 1 {
		t.Fatalf("control run: %q, marks %d", got, len(marked("slow")))
	}

	start := time.Now()
	if got, _ := ask("missing"); !strings.Contains(got, "not_found") || !strings.Contains(got, "no-such-chain") {
		t.Fatalf("missing target: %q", got)
	}
	// The whole run (two LLM turns) includes the missing-target call; the
	// call itself answers at once, never waiting for its timeout (the
	// default, 120s): a bound no correct run under load comes near.
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("missing target took %v", d)
	}

	for i := 0; i < 3; i++ {
		got, _ := ask("two_ends")
		if got != `result: [{"node":"first","data":"first"},{"node":"second","data":"second"}]` {
			t.Fatalf("multi-end result: %q", got)
		}
	}
}

// TestMissingTargetAnswersAtOnce times the tool call alone, through the
// wrapper's own duration in the TOOL_CALL_RESULT event.
func TestMissingTargetAnswersAtOnce(t *testing.T) {
	p := pool(t)
	srv := llmtest.NewServer(t, llmtest.Sequence(llmtest.Calls(llmtest.Call("missing", `{}`)), llmtest.Reply("ok")))
	parent := deploy(t, p, chain("caller2", "Caller", nil, []map[string]any{agentNode(srv.URL, "x", map[string]any{
		"tools": []any{map[string]any{"type": "rulechain", "name": "missing", "targetId": "nowhere"}}})}))
	r := send(t, context.Background(), parent, "go", nil, true)
	oneTerminal(t, r, types.Success)
	for _, e := range r.rec.Events() {
		if e.Type == events.ToolCallResult {
			if !e.Meta.IsError || e.Meta.ErrorKind != "not_found" || e.Meta.DurationMs >= 100 {
				t.Fatalf("result %+v", e)
			}
			return
		}
	}
	t.Fatal("no tool result")
}
