package server

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/sessions"
)

// pricedLedger is a usage ledger in memory with the usage tests' prices.
func pricedLedger(t *testing.T) *ledger.Ledger {
	t.Helper()
	sess := sessions.NewMemory()
	t.Cleanup(func() { sess.Close() })
	st, err := ledger.StoreFor(sess, 0)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := ledger.ParsePrices([]byte(usagePrices))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ledger.Options{Store: st, Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// shape is an encoded event's field names, its metadata's and its usage
// entries' ("metadata.x", "usage.x").
func shape(t *testing.T, data string) []string {
	t.Helper()
	var ev map[string]json.RawMessage
	if err := json.Unmarshal([]byte(data), &ev); err != nil {
		t.Fatal(err)
	}
	out := slices.Collect(maps.Keys(ev))
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(ev["metadata"], &meta)
	for k := range meta {
		out = append(out, "metadata."+k)
	}
	var usage []map[string]json.RawMessage
	_ = json.Unmarshal(ev["usage"], &usage)
	for _, u := range usage {
		for k := range u {
			out = append(out, "usage."+k)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// A paused run that is cancelled ends with the RUN_FINISHED a live run
// cancelled ends with, field for field: its usage (the run's up to its
// pause, what its checkpoint keeps), its duration since it started, and
// its cost at the server's prices.
func TestCancelledPausedRunsEndCarriesUsageAndDuration(t *testing.T) {
	rl, _ := boltRunLog(t, stateFile(t))
	e := newAPIEnvWith(t, Options{}, StoreOptions{RunLog: rl, Ledger: pricedLedger(t)})

	// A live run cancelled in its second turn, after a tool call.
	slow := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if r.Turn() == 0 {
			return llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("lookup", `{"key":"A-1"}`)},
				Usage: &llmtest.Usage{PromptTokens: 50, CompletionTokens: 5}}
		}
		return llmtest.Response{Text: "never all of it", ChunkSize: 2, ChunkDelay: time.Minute}
	}))
	dsl := chainDSL("second", "Second", nil, agentNode(promptChat, map[string]any{"url": slow.URL, "tools": []any{
		map[string]any{"type": "rulechain", "name": "lookup", "description": "Looks a key up.", "targetId": "lookup",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"key": map[string]any{"type": "string"}}}}}}))
	if code, body, _ := e.do("PUT", "/api/v1/chains/second", dsl); code/100 != 2 {
		t.Fatalf("deploy: %d %s", code, body)
	}
	live := e.openSSE(t.Context(), "POST", "/api/v1/chains/second/run", `{"input": "go", "stream": true, "runId": "live-cancelled"}`)
	live.until(t, "TOOL_CALL_RESULT")
	if code, body, _ := e.do("POST", "/api/v1/runs/live-cancelled/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	lf := live.wait(t)
	liveEnd := lf[len(lf)-1].data
	if !strings.Contains(liveEnd, `"outcome":{"type":"cancelled"}`) || !strings.Contains(liveEnd, `"cost"`) {
		t.Fatalf("the live run's cancelled end: %s", liveEnd)
	}

	// A paused run, cancelled.
	code, body, _ := e.do("POST", "/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "runId": "paused-cancelled"})
	var ans runAnswer
	if code != 200 || json.Unmarshal(body, &ans) != nil || ans.Outcome != "interrupt" {
		t.Fatalf("run: %d %s", code, body)
	}
	time.Sleep(30 * time.Millisecond)
	if code, body, _ := e.do("POST", "/api/v1/runs/paused-cancelled/cancel", nil); code != 202 {
		t.Fatalf("cancel: %d %s", code, body)
	}
	all := e.openSSE(t.Context(), "GET", "/api/v1/runs/paused-cancelled/events?after=0", "").wait(t)
	var pause, end struct {
		Usage []map[string]any `json:"usage"`
		Meta  struct {
			DurationMs int64  `json:"durationMs"`
			Cost       string `json:"cost"`
			Currency   string `json:"currency"`
		} `json:"metadata"`
	}
	pausedEnd := ""
	for _, f := range all {
		if strings.Contains(f.data, `"outcome":{"type":"interrupt"`) {
			pausedEnd = f.data
		}
	}
	last := all[len(all)-1].data
	if pausedEnd == "" || json.Unmarshal([]byte(pausedEnd), &pause) != nil || json.Unmarshal([]byte(last), &end) != nil {
		t.Fatalf("the cancelled paused run's log: %+v", all)
	}
	if got, want := shape(t, last), shape(t, liveEnd); !slices.Equal(got, want) {
		t.Fatalf("the cancelled paused run's end has fields %v, a live run's cancelled end %v\n%s\n%s", got, want, last, liveEnd)
	}
	pu, _ := json.Marshal(pause.Usage)
	eu, _ := json.Marshal(end.Usage)
	if string(pu) != string(eu) || end.Meta.Cost != pause.Meta.Cost || end.Meta.Currency != "USD" || end.Meta.DurationMs < 30 {
		t.Fatalf("the cancelled paused run's end %s, its pause %s", last, pausedEnd)
	}
}
