package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/sessions"
)

// The usage tests' agents, told apart by their system prompts.
const (
	promptIntent = "Classify the user's message"
	promptSpend  = "You are the spending agent."
)

// usagePrices prices the scripted models: test-model (the agents'),
// backup-model (the failover's).
const usagePrices = `{"currency": "USD", "models": [
  {"model": "test-model", "input": 1.5, "cachedInput": 0.5, "output": 6},
  {"model": "backup-*", "input": 3, "output": 12}]}`

// spendingAgent takes four turns of 400 tokens each, costing 0.001 USD
// each (a tool call between them), so that a budget of 1000 tokens or
// 0.0025 USD a day is crossed by the third turn of a run, and the fourth
// is refused.
func spendingAgent(r *llmtest.Request) llmtest.Response {
	u := &llmtest.Usage{PromptTokens: 300, CompletionTokens: 100, CachedTokens: 50}
	if r.Turn() < 3 {
		return llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("lookup", fmt.Sprintf(`{"key":"K-%d"}`, r.Turn()))}, Usage: u}
	}
	return llmtest.Response{Text: "spent", Usage: u}
}

// newUsageEnv is the API env with a usage ledger on the backend named
// ("bolt", "redis" or "memory") and more chains: router (ai/intent in
// front of an agent), fallback (an agent whose primary endpoint always
// fails, so its failover answers as backup-model), spend and spend2 (two
// chains of the spending agent).
func newUsageEnv(t *testing.T, backend string, budgets *ledger.Budgets, opts Options) (*apiEnv, *ledger.Ledger) {
	t.Helper()
	var sess sessions.Store
	var err error
	switch backend {
	case "bolt":
		sess, err = sessions.OpenBolt(filepath.Join(t.TempDir(), "sessions.db"))
	case "redis":
		sess, err = sessions.OpenRedis(context.Background(), redistest.Start(t).URL)
	default:
		sess = sessions.NewMemory()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	st, err := ledger.StoreFor(sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := ledger.ParsePrices([]byte(usagePrices))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ledger.Options{Store: st, Prices: prices, Budgets: budgets})
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the store (cleanups run last first): every run's
	// records are written.
	t.Cleanup(l.Close)

	down := llmtest.NewServer(t, llmtest.Always(llmtest.Response{Status: http.StatusInternalServerError, ErrorMessage: "the primary is down"}))
	e := &apiEnv{t: t, dir: t.TempDir(), llm: llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains(promptIntent), Script: llmtest.Always(llmtest.Reply("refund"))},
		llmtest.Rule{Match: llmtest.SystemContains(promptSpend), Script: llmtest.ScriptFunc(spendingAgent)},
		llmtest.Rule{Match: func(*llmtest.Request) bool { return true }, Script: apiScript()},
	))}
	chains := testChains()
	chains["router"] = routerDSL()
	chains["fallback"] = chainDSL("fallback", "Fallback", nil, agentNode(promptChat, map[string]any{
		"url": down.URL, "failover": []any{map[string]any{"url": e.llm.URL, "key": "sk-test", "model": "backup-model"}}}))
	spend := agentNode(promptSpend, map[string]any{"tools": []any{map[string]any{"type": "rulechain", "name": "lookup",
		"description": "Looks a key up.", "targetId": "lookup",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}}})
	chains["spend"] = chainDSL("spend", "Spend", nil, spend)
	chains["spend2"] = chainDSL("spend2", "Spend 2", nil, spend)
	for id, dsl := range chains {
		if err := os.WriteFile(filepath.Join(e.dir, id+".json"), []byte(dsl), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var errs []error
	e.store, errs = OpenStoreWith(e.dir, NewConfig(map[string]string{"llm_url": e.llm.URL, "api_key": "sk-test", "model": "test-model"}),
		StoreOptions{Ledger: l})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(e.store.Close)
	opts.Store = e.store
	e.opts = opts
	e.base = serveLoopback(t, Handler(opts))
	return e, l
}

// routerDSL is a chain whose ai/intent node sends refunds to an agent.
func routerDSL() string {
	b, _ := json.Marshal(map[string]any{
		"ruleChain": map[string]any{"id": "router", "name": "Router"},
		"metadata": map[string]any{"firstNodeIndex": 0, "nodes": []any{
			map[string]any{"id": "route", "type": "ai/intent", "name": "Route", "configuration": map[string]any{
				"maxRetries": 0, "intents": []any{map[string]any{"name": "refund", "description": "money back"}}}},
			agentNode(promptChat, nil),
		}, "connections": []any{map[string]any{"fromId": "route", "toId": "agent", "type": "refund"}}},
	})
	return string(b)
}
