package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/demo"
)

// The gallery: every example chain of chains/, deployed as shipped, runs
// on the built-in demo model (what `make run` offers with no LLM), driven
// by the real @ag-ui/client as a front end would: the support agent calls
// its business chain, the orchestrator its two sub-agents in parallel, the
// chain guide the self MCP server, the page helper a front-end tool the
// client answers, and the support desk routes by intent to an agent whose
// refund a person approves.
func TestGalleryOnTheDemoModel(t *testing.T) {
	e := galleryEnv(t)
	if code, body, _ := e.do("GET", "/examples/frontend-tools.html", nil); code != 200 || !strings.Contains(string(body), "page-helper") {
		t.Fatalf("the front-end tool page: %d %.200s", code, body)
	}
	fp := func(extra map[string]any) map[string]any {
		r := map[string]any{"subagentEvents": true}
		for k, v := range extra {
			r[k] = v
		}
		return map[string]any{"ruleagent": r}
	}
	setTheme := map[string]any{"name": "set_theme", "description": "Switch this page's colour theme between light and dark.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"theme": map[string]any{"type": "string", "enum": []string{"light", "dark"}}}, "required": []string{"theme"}}}
	res := e.runAGUI(false,
		map[string]any{"name": "support", "chain": "support-agent", "messages": userMsg("Where is my order A-1001?"), "forwardedProps": fp(map[string]any{"userId": "alice"})},
		map[string]any{"name": "orchestrator", "chain": "orchestrator", "messages": userMsg("Review this loop and summarise the notes: for i := 0; i < n-1; i++ {}"), "forwardedProps": fp(nil)},
		map[string]any{"name": "guide", "chain": "chain-guide", "messages": userMsg("Which chains are deployed?"), "forwardedProps": fp(nil)},
		map[string]any{"name": "page", "chain": "page-helper", "messages": userMsg("Switch to the dark theme"), "tools": []any{setTheme},
			"toolResults": map[string]any{"set_theme": `{"theme":"dark"}`}, "forwardedProps": fp(nil)},
		map[string]any{"name": "refund", "chain": "support-desk", "messages": userMsg("Please refund order A-1002"), "forwardedProps": fp(map[string]any{"userId": "alice"}),
			"answers": map[string]any{"issue_refund": map[string]any{"approved": true}}},
	)

	support := onlyRun(t, res, "support")
	wantCalls(t, "support", support, "get_order_status")
	wantResult(t, "support", res["support"], "[demo model] get_order_status answered: carrier DHL, eta 2026-11-25, found true, orderId A-1001, status shipped.")
	if !strings.Contains(toolResult(support, "get_order_status"), `"status":"shipped"`) {
		t.Errorf("support: the business chain's result: %q", toolResult(support, "get_order_status"))
	}

	orch := onlyRun(t, res, "orchestrator")
	wantCalls(t, "orchestrator", orch, "Code_Reviewer", "Summarizer")
	var subs []string
	firstResult, lastStart := len(orch), 0
	for i, ev := range orch {
		switch {
		case ev["type"] == "SUBAGENT_STARTED":
			subs = append(subs, fmt.Sprint(ev["name"]))
		case ev["type"] == "TOOL_CALL_START" && ev["subagentRunId"] == nil:
			lastStart = i
		case ev["type"] == "TOOL_CALL_RESULT" && ev["subagentRunId"] == nil:
			firstResult = min(firstResult, i)
		}
	}
	if len(subs) != 2 || !strings.Contains(strings.Join(subs, ","), "Code Reviewer") || !strings.Contains(strings.Join(subs, ","), "Summarizer") {
		t.Errorf("orchestrator: sub-agents %v", subs)
	}
	if lastStart > firstResult {
		t.Errorf("orchestrator: the sub-agents were not called together (a result came before the second call)")
	}
	wantResult(t, "orchestrator", res["orchestrator"], "[demo model] 2 tool results:\n- Code_Reviewer answered: “A scripted reply to “Review this loop")

	guide := onlyRun(t, res, "guide")
	wantCalls(t, "guide", guide, "chains__list_rule_chains")
	wantResult(t, "guide", res["guide"], "[demo model] chains__list_rule_chains answered: chains (")
	for _, id := range []string{"assistant", "chain-guide", "orchestrator", "page-helper", "support-agent", "support-desk"} {
		if got := fmt.Sprint(res["guide"].Runs[0].Finished.Result); !strings.Contains(got, " "+id+",") && !strings.Contains(got, " "+id+".") {
			t.Errorf("guide: %s is not in %q", id, got)
		}
	}

	page := res["page"]
	if len(page.Runs) != 2 {
		t.Fatalf("page: %d runs, want the tool call's and the answer's", len(page.Runs))
	}
	first := checkRun(t, "page#1", page.Runs[0])
	wantCalls(t, "page#1", first, "set_theme")
	if p := page.Runs[0].Finished; p == nil || len(p.PendingToolCallIDs) != 1 {
		t.Fatalf("page: the first run did not wait for the front-end tool: %+v", p)
	}
	for _, ev := range first {
		if ev["type"] == "TOOL_CALL_ARGS" && ev["delta"] != nil && !strings.Contains(`{"theme":"dark"}`, fmt.Sprint(ev["delta"])) {
			t.Errorf("page: set_theme arguments %v", ev["delta"])
		}
	}
	checkRun(t, "page#2", page.Runs[1])
	wantResult(t, "page", page, "[demo model] set_theme answered: theme dark.")

	refund := res["refund"]
	if len(refund.Runs) != 2 || refund.Runs[0].Finished == nil || refund.Runs[0].Finished.Outcome != "interrupt" {
		t.Fatalf("refund: the run did not pause for approval: %+v", refund.Runs)
	}
	paused := checkRun(t, "refund#1", refund.Runs[0])
	wantCalls(t, "refund#1", paused, "issue_refund")
	out, _ := paused[len(paused)-1]["outcome"].(map[string]any)
	ins, _ := out["interrupts"].([]any)
	if len(ins) != 1 || ins[0].(map[string]any)["message"] != `Approve issue_refund {"orderId":"A-1002"}?` {
		t.Fatalf("refund: interrupts %v", out)
	}
	resumed := checkRun(t, "refund#2", refund.Runs[1])
	if !strings.Contains(toolResult(resumed, ""), `"refundId":"R-1002"`) {
		t.Errorf("refund: the approved call's result: %q", toolResult(resumed, ""))
	}
	wantResult(t, "refund", refund, "[demo model] issue_refund answered: orderId A-1002, reason not given, refundId R-1002, refunded true.")
}

// The support desk's intent node routes on the demo model's pick, each
// message leaving with metadata intent: a shipping question to the order
// desk agent, a refund to the refunds agent (whose call waits for a
// person: the run route answers with the interrupt, the resume route with
// the rest of the run), anything else to the fixed answer.
func TestGalleryIntentRouting(t *testing.T) {
	e := galleryEnv(t)
	type answer struct {
		RunID      string            `json:"runId"`
		Outcome    string            `json:"outcome"`
		Data       string            `json:"data"`
		Metadata   map[string]string `json:"metadata"`
		Interrupts []struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"interrupts"`
	}
	post := func(path string, body any) answer {
		t.Helper()
		code, raw, _ := e.do("POST", path, body)
		var a answer
		if code != 200 || json.Unmarshal(raw, &a) != nil {
			t.Fatalf("%s: %d %s", path, code, raw)
		}
		return a
	}
	for _, tc := range []struct{ input, intent, data string }{
		{"Where is my order A-1001?", "shipping", "[demo model] get_order_status answered: carrier DHL"},
		{"Tell me a joke", "Other", "This desk tells you where your order is and handles refunds."},
	} {
		a := post("/api/v1/chains/support-desk/run", map[string]any{"input": tc.input, "metadata": map[string]string{"userId": "alice"}})
		if a.Metadata["intent"] != tc.intent || !strings.HasPrefix(a.Data, tc.data) {
			t.Errorf("%q: intent %q, data %q; want %q, %q", tc.input, a.Metadata["intent"], a.Data, tc.intent, tc.data)
		}
	}
	a := post("/api/v1/chains/support-desk/run", map[string]any{"input": "Please refund order A-1002"})
	if a.Outcome != "interrupt" || len(a.Interrupts) != 1 || a.Interrupts[0].Message != `Approve issue_refund {"orderId":"A-1002"}?` {
		t.Fatalf("refund: %+v", a)
	}
	a = post("/api/v1/runs/"+a.RunID+"/resume", map[string]any{"stream": false,
		"resume": []any{map[string]any{"interruptId": a.Interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}})
	if a.Metadata["intent"] != "refund" || !strings.HasPrefix(a.Data, "[demo model] issue_refund answered: orderId A-1002") {
		t.Errorf("refund resumed: intent %q, data %q", a.Metadata["intent"], a.Data)
	}
}

// galleryEnv serves a copy of chains/ with the LLM globals the command
// line sets when no LLM is configured.
func galleryEnv(t *testing.T) *apiEnv {
	t.Helper()
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join("..", "chains", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("chains/: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store, errs := OpenStore(dir, NewConfig(map[string]string{"llm_url": demo.URL, "model": demo.Model}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(store.Close)
	e := &apiEnv{t: t, dir: dir, store: store, opts: Options{Store: store}}
	e.base = serveLoopback(t, Handler(e.opts))
	return e
}

func onlyRun(t *testing.T, res map[string]aguiResult, name string) []map[string]any {
	t.Helper()
	r := res[name]
	if len(r.Runs) != 1 {
		t.Fatalf("%s: %d runs", name, len(r.Runs))
	}
	return checkRun(t, name, r.Runs[0])
}

// wantCalls checks the run's own tool calls (not its sub-agents'), in order.
func wantCalls(t *testing.T, name string, evs []map[string]any, want ...string) {
	t.Helper()
	var got []string
	for _, ev := range evs {
		if ev["type"] == "TOOL_CALL_START" && ev["subagentRunId"] == nil {
			got = append(got, fmt.Sprint(ev["toolCallName"]))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s: tool calls %v, want %v", name, got, want)
	}
}

// toolResult is the content of the run's first own result of a call of
// the named tool (any tool for "").
func toolResult(evs []map[string]any, tool string) string {
	names := map[any]any{}
	for _, ev := range evs {
		switch {
		case ev["subagentRunId"] != nil:
		case ev["type"] == "TOOL_CALL_START":
			names[ev["toolCallId"]] = ev["toolCallName"]
		case ev["type"] == "TOOL_CALL_RESULT" && (tool == "" || names[ev["toolCallId"]] == tool):
			return fmt.Sprint(ev["content"])
		}
	}
	return ""
}

func wantResult(t *testing.T, name string, r aguiResult, prefix string) {
	t.Helper()
	last := r.Runs[len(r.Runs)-1].Finished
	if last == nil || !strings.HasPrefix(fmt.Sprint(last.Result), prefix) {
		t.Errorf("%s: the answer %v does not start with %q", name, last, prefix)
	}
}

// The OpenAI route serves the examples on the demo model too: the answer
// names the model and is marked, with the agent's tool activity.
func TestGalleryOverOpenAI(t *testing.T) {
	e := galleryEnv(t)
	code, body, _ := e.do("POST", "/v1/chat/completions", map[string]any{"model": "support-agent", "user": "alice",
		"messages": []any{map[string]any{"role": "user", "content": "Where is my order A-1001?"}}})
	var res struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(body, &res) != nil || len(res.Choices) != 1 {
		t.Fatalf("%d %s", code, body)
	}
	content := res.Choices[0].Message.Content
	for _, want := range []string{`> → get_order_status {"orderId":"A-1001"}`, "[demo model] get_order_status answered: carrier DHL"} {
		if !strings.Contains(content, want) {
			t.Errorf("the answer lacks %q:\n%s", want, content)
		}
	}
}
