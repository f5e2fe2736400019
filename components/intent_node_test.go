package components

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools/limits"
)

func intentChain(t *testing.T, url string, extra map[string]any) (string, []byte) {
	t.Helper()
	cfg := map[string]any{"url": url, "model": "test-model", "intents": []any{
		map[string]any{"name": "refund", "description": "the customer wants money back"},
		map[string]any{"name": "shipping", "description": "where a parcel is"},
	}}
	for k, v := range extra {
		cfg[k] = v
	}
	id := "intent-" + strings.ReplaceAll(t.Name(), "/", "-")
	b, _ := json.Marshal(chain(id, "Intent", nil, []map[string]any{{"id": "intent", "type": IntentType, "name": "Intent", "configuration": cfg}}))
	return id, b
}

// The message leaves by the relation of the intent the model picks, with
// metadata intent and usage, its data unchanged; an answer naming no
// intent, or two, leaves by Other.
func TestIntentRoutes(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		u := r.LastUserText()
		switch {
		case strings.Contains(u, "money"):
			return llmtest.Reply("refund")
		case strings.Contains(u, "parcel"):
			return llmtest.Reply(" \"Shipping.\"")
		case strings.Contains(u, "both"):
			return llmtest.Reply("refund or shipping")
		}
		return llmtest.Reply("This is about the weather.")
	}))
	id, dsl := intentChain(t, srv.URL, map[string]any{"instructions": "Customers write in ${metadata.lang}."})
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	for _, tc := range []struct{ data, rel string }{
		{"I want my money back", "refund"},
		{`{"messages":[{"role":"user","content":"where is my parcel?"}]}`, "shipping"},
		{"both please", IntentOther},
		{"is it sunny?", IntentOther},
	} {
		end := oneTerminal(t, send(t, context.Background(), e, tc.data, map[string]string{"lang": "English"}, false), tc.rel)
		if end.msg.Metadata.GetValue("intent") != tc.rel || end.msg.GetData() != tc.data || end.msg.Metadata.GetValue("totalTokens") == "0" {
			t.Errorf("%q: intent %q, data %q, tokens %s", tc.data, end.msg.Metadata.GetValue("intent"), end.msg.GetData(), end.msg.Metadata.GetValue("totalTokens"))
		}
	}
	req := srv.LastRequest()
	sys := req.System()
	for _, want := range []string{"- refund: the customer wants money back", "- shipping: where a parcel is", "- Other: none of the above", "Customers write in English."} {
		if !strings.Contains(sys, want) {
			t.Errorf("the classifier's prompt lacks %q:\n%s", want, sys)
		}
	}
	// Streamed, with usage, so that a stalled provider is noticed.
	if req.JSON["temperature"] != 0.0 || req.JSON["stream"] != true || !req.IncludeUsage {
		t.Errorf("request: temperature %v, stream %v, usage %v", req.JSON["temperature"], req.JSON["stream"], req.IncludeUsage)
	}
}

func TestIntentConfigAndFailures(t *testing.T) {
	for _, c := range []struct {
		extra map[string]any
		field string
	}{
		{map[string]any{"intents": []any{}}, "intents: at least one"},
		{map[string]any{"intents": []any{map[string]any{"name": "two words"}}}, "intents[0].name"},
		{map[string]any{"intents": []any{map[string]any{"name": "other"}}}, "intents[0].name: \"other\" is taken"},
		{map[string]any{"intents": []any{map[string]any{"name": "a", "colour": "red"}}}, `intents[0].colour: unknown field`},
		{map[string]any{"params": map[string]any{"responseFormat": "yaml"}}, "params.responseFormat"},
		{map[string]any{"timeout": "soon"}, "timeout"},
	} {
		id, dsl := intentChain(t, "http://127.0.0.1:1/v1", c.extra)
		if _, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig())); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%v: err %v, want it to name %q", c.extra, err, c.field)
		}
	}
	// No LLM: the chain loads; a message fails saying what to set.
	id, dsl := intentChain(t, "", map[string]any{"model": ""})
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	end := oneTerminal(t, send(t, context.Background(), e, "hi", nil, false), types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != CodeNoLLM || end.err == nil || !strings.Contains(end.err.Error(), "url") {
		t.Errorf("no LLM: %v %v", end.msg.Metadata.GetValue("errorCode"), end.err)
	}
	// The LLM failing: Failure, errorCode llm_error.
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: 400, ErrorMessage: "bad request for key sk-intent-secret-123456"}))
	id, dsl = intentChain(t, srv.URL, map[string]any{"key": "sk-intent-secret-123456"})
	e, err = rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	end = oneTerminal(t, send(t, context.Background(), e, "hi", nil, false), types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != "llm_error" || end.err == nil || !strings.Contains(end.err.Error(), "bad request") ||
		strings.Contains(end.err.Error(), "sk-intent-secret-123456") {
		t.Errorf("LLM failure: %v %v", end.msg.Metadata.GetValue("errorCode"), end.err)
	}
}

// The classifier's tokens count in the run's usage (the ledger a server
// or a calling agent keeps) and in the metrics, as an agent's do.
func TestIntentTokensReachUsageAndMetrics(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Text: "refund",
		Usage: &llmtest.Usage{PromptTokens: 30, CompletionTokens: 2, TotalTokens: 32}}))
	id, dsl := intentChain(t, srv.URL, nil)
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	prompt := testutil.ToFloat64(metrics.Tokens.WithLabelValues("test-model", "prompt"))
	reqs := testutil.ToFloat64(metrics.LLMRequests.WithLabelValues("test-model", "ok"))
	ledger := agent.NewLedger(nil)
	oneTerminal(t, send(t, agent.WithLedger(context.Background(), ledger), e, "money back", nil, false), "refund")
	if u := ledger.Total(); u.PromptTokens != 30 || u.CompletionTokens != 2 || u.TotalTokens != 32 {
		t.Errorf("run usage %+v", u)
	}
	if got := ledger.Entries(); len(got) != 1 || got[0].Model != "test-model" || got[0].Provider == "" {
		t.Errorf("usage entries %+v", got)
	}
	if testutil.ToFloat64(metrics.Tokens.WithLabelValues("test-model", "prompt")) != prompt+30 ||
		testutil.ToFloat64(metrics.LLMRequests.WithLabelValues("test-model", "ok")) != reqs+1 {
		t.Errorf("metrics not counted")
	}
}

// A classification whose stream stalls is abandoned after
// firstByteTimeout and tried again, within the node's timeout.
func TestIntentStallIsRetried(t *testing.T) {
	var n atomic.Int32
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(*llmtest.Request) llmtest.Response {
		if n.Add(1) == 1 {
			return llmtest.Response{Text: "refund", Stall: time.Hour}
		}
		return llmtest.Reply("shipping")
	}))
	id, dsl := intentChain(t, srv.URL, map[string]any{"firstByteTimeout": "300ms", "timeout": "10s"})
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	start := time.Now()
	oneTerminal(t, send(t, context.Background(), e, "where is it?", nil, false), "shipping")
	if took := time.Since(start); took > 5*time.Second || len(srv.Requests()) != 2 {
		t.Fatalf("took %v, %d requests", took, len(srv.Requests()))
	}
}

// spentBudget is a usage recorder whose daily budget is spent.
type spentBudget struct{}

func (spentBudget) LLMCall(agent.LLMCall) (string, string) { return "", "" }
func (spentBudget) ToolCall(agent.ToolCallUse)             {}
func (spentBudget) Admit(context.Context) error {
	return limits.Hit(ledger.LimitUserTokens, 1000, 1200, `user "alice" has used 1200 tokens today (UTC), reaching its daily budget of 1000`)
}

// A classification refused by a spent budget fails as an agent's turn
// does: Failure with errorCode limit_exceeded and errorLimit naming the
// budget, the error a *agent.RunError with the limit, and no LLM call.
func TestIntentBudgetRefusalNamesItsLimit(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("refund")))
	id, dsl := intentChain(t, srv.URL, nil)
	e, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	ctx := agent.WithLedger(context.Background(), agent.NewRecordingLedger(spentBudget{}))
	end := oneTerminal(t, send(t, ctx, e, "money back", nil, false), types.Failure)
	if got := end.msg.Metadata.GetValue("errorCode"); got != agent.CodeLimit {
		t.Errorf("errorCode %q", got)
	}
	if got := end.msg.Metadata.GetValue("errorLimit"); got != ledger.LimitUserTokens {
		t.Errorf("errorLimit %q, want %q", got, ledger.LimitUserTokens)
	}
	var re *agent.RunError
	if !errors.As(end.err, &re) || re.Limit != ledger.LimitUserTokens || !errors.Is(end.err, limits.ErrExceeded) {
		t.Errorf("error %T %v", end.err, end.err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d LLM calls after the refusal", n)
	}
}
