package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/ledger"
)

// post sends a JSON body and returns the answer, without failing the test
// (it runs in goroutines).
func (e *apiEnv) post(path string, body any) (int, []byte, error) {
	j, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, e.base+path, bytes.NewReader(j))
	req.Header.Set("Content-Type", "application/json")
	if e.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+e.opts.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// streamEnd is what one AG-UI stream reported: its run, its terminal
// event's usage and cost, its tool results (sub-agents' included) and the
// interrupts it ended on.
type streamEnd struct {
	runID, user, chain string
	terminal           string
	code               string
	usage              []events.TokenUsage
	cost               string
	toolResults        int
	interrupts         []events.Interrupt
}

func readStream(t *testing.T, body []byte, user, chain string) streamEnd {
	t.Helper()
	end := streamEnd{user: user, chain: chain}
	raws := sseEvents(t, body)
	// Cost metadata and all, each stream is a valid AG-UI run.
	for _, v := range aguicheck.Check(raws) {
		t.Errorf("AG-UI violation in a %s stream: %v", chain, v)
	}
	for _, raw := range raws {
		var ev struct {
			Type     string              `json:"type"`
			RunID    string              `json:"runId"`
			Code     string              `json:"code"`
			Usage    []events.TokenUsage `json:"usage"`
			Outcome  *struct{ Interrupts []events.Interrupt }
			Metadata struct{ Cost string }
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("event %s: %v", raw, err)
		}
		switch ev.Type {
		case "RUN_STARTED":
			end.runID = ev.RunID
		case "TOOL_CALL_RESULT":
			end.toolResults++
		case "RUN_FINISHED", "RUN_ERROR":
			end.terminal, end.code, end.usage, end.cost = ev.Type, ev.Code, ev.Usage, ev.Metadata.Cost
			if ev.Outcome != nil {
				end.interrupts = ev.Outcome.Interrupts
			}
		}
	}
	if end.terminal == "" {
		t.Fatalf("a stream without a terminal event: %s", body)
	}
	return end
}

// sums adds up terminal events' usage by a key of the stream.
func sums(ends []streamEnd, key func(streamEnd) string) map[string]ledger.Totals {
	out := map[string]ledger.Totals{}
	for _, e := range ends {
		t := out[key(e)]
		for _, u := range e.usage {
			t.InputTokens += u.InputTokens
			t.OutputTokens += u.OutputTokens
			t.CachedInputTokens += u.CachedInputTokens
			t.ReasoningTokens += u.ReasoningTokens
			t.TotalTokens += u.InputTokens + u.OutputTokens
		}
		if e.cost != "" {
			c, _ := ledger.ParseAmount(e.cost)
			t.Cost += c
		}
		out[key(e)] = t
	}
	return out
}

func tokensOnly(t ledger.Totals) ledger.Totals {
	return ledger.Totals{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CachedInputTokens: t.CachedInputTokens,
		ReasoningTokens: t.ReasoningTokens, TotalTokens: t.TotalTokens, Cost: t.Cost}
}

// TestLedgerMatchesRunFinishedUsage runs a mixed load through the server
// (agents over AG-UI and the run route, sub-agents, an ai/intent router,
// a failover, runs paused for approval and resumed under the same id and
// under a new one) and checks that the ledger's totals by run, user,
// chain and model are exactly the sums of what the streams' terminal
// events reported, costs included; that it holds every LLM call the
// scripted LLM answered and every tool call the streams showed; and that
// /metrics counts them by chain and model only. Embedded and Redis.
func TestLedgerMatchesRunFinishedUsage(t *testing.T) {
	for _, backend := range []string{"bolt", "redis"} {
		t.Run(backend, func(t *testing.T) { testLedgerMatches(t, backend) })
	}
}

func testLedgerMatches(t *testing.T, backend string) {
	e, _ := newUsageEnv(t, backend, nil, Options{})
	type job struct {
		path, user, chain string
		body              map[string]any
	}
	agui := func(chain, user, text string) job {
		return job{"/api/v1/chains/" + chain + "/agui", user, chain, map[string]any{"messages": userMsg(text),
			"forwardedProps": map[string]any{"ruleagent": map[string]any{"userId": user}}}}
	}
	runRoute := func(chain, user, text string) job {
		return job{"/api/v1/chains/" + chain + "/run", user, chain, map[string]any{"input": text, "stream": true,
			"metadata": map[string]any{"userId": user}}}
	}
	jobs := []job{
		agui("tools", "u1", "delegate this"), agui("tools", "u2", "delegate that"), agui("tools", "u1", "delegate again"),
		runRoute("tools", "u2", "lookup please"), runRoute("tools", "u2", "lookup more"),
		runRoute("router", "u3", "I want my money back"), runRoute("router", "u3", "refund me"),
		runRoute("fallback", "u1", "hi"), runRoute("fallback", "u1", "hello"),
		agui("chat", "u4", "please think"),
	}
	var mu sync.Mutex
	var ends []streamEnd
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body, err := e.post(j.path, j.body)
			if err != nil || code != 200 {
				errs <- fmt.Errorf("%s: %d %v %s", j.path, code, err, body)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ends = append(ends, readStream(t, body, j.user, j.chain))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Paused for approval, then resumed: under its own id (the run route)
	// and under a new id (AG-UI, as a client resumes).
	resumed := func(first streamEnd, path string, body map[string]any) {
		if first.terminal != "RUN_FINISHED" || len(first.interrupts) != 1 {
			t.Fatalf("the guarded run did not pause: %+v", first)
		}
		body["resume"] = []any{map[string]any{"interruptId": first.interrupts[0].ID, "status": "resolved", "payload": map[string]any{"approved": true}}}
		code, b, err := e.post(path, body)
		if err != nil || code != 200 {
			t.Fatalf("resume: %d %v %s", code, err, b)
		}
		second := readStream(t, b, first.user, first.chain)
		if second.terminal != "RUN_FINISHED" || second.toolResults != 1 {
			t.Fatalf("the resumed run: %+v", second)
		}
		ends = append(ends, first, second)
	}
	_, b, _ := e.post("/api/v1/chains/guarded/run", map[string]any{"input": "lookup it", "stream": true, "threadId": "t-g1",
		"metadata": map[string]any{"userId": "u2"}})
	first := readStream(t, b, "u2", "guarded")
	resumed(first, "/api/v1/runs/"+first.runID+"/resume", map[string]any{"stream": true})
	_, b, _ = e.post("/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-g2", "runId": "run-g2", "messages": userMsg("lookup it"),
		"forwardedProps": map[string]any{"ruleagent": map[string]any{"userId": "u4"}}})
	first = readStream(t, b, "u4", "guarded")
	resumed(first, "/api/v1/chains/guarded/agui", map[string]any{"threadId": "t-g2", "runId": "run-g2-resumed", "messages": []any{}})
	if got := ends[len(ends)-1].runID; got != "run-g2-resumed" {
		t.Fatalf("the AG-UI resume ran as %q", got)
	}

	query := func(by string) map[string]ledger.Totals {
		code, body, _ := e.do("GET", "/api/v1/usage?since=1h&by="+by, nil)
		var rep ledger.Report
		if code != 200 || json.Unmarshal(body, &rep) != nil {
			t.Fatalf("usage by %s: %d %s", by, code, body)
		}
		out := map[string]ledger.Totals{}
		for _, g := range rep.Groups {
			out[g.Key[by]] = g.Totals
		}
		out[""] = rep.Total
		return out
	}
	byRun := query("run")
	for _, dim := range []struct {
		by  string
		key func(streamEnd) string
	}{
		{"run", func(s streamEnd) string { return s.runID }},
		{"user", func(s streamEnd) string { return s.user }},
		{"chain", func(s streamEnd) string { return s.chain }},
	} {
		want, got := sums(ends, dim.key), query(dim.by)
		if len(got) != len(want)+1 {
			t.Errorf("by %s: %d groups in the ledger, %d in the streams", dim.by, len(got)-1, len(want))
		}
		for k, w := range want {
			if g := tokensOnly(got[k]); g != w {
				t.Errorf("by %s, %q: ledger %+v, streams %+v", dim.by, k, g, w)
			}
		}
	}
	// By model: the failover's calls are backup-model's.
	wantModels := map[string]ledger.Totals{}
	for _, e := range ends {
		for _, u := range e.usage {
			m := wantModels[u.Model]
			m.InputTokens += u.InputTokens
			m.OutputTokens += u.OutputTokens
			wantModels[u.Model] = m
		}
	}
	gotModels := query("model")
	if len(wantModels) != 2 || wantModels["backup-model"].InputTokens == 0 {
		t.Fatalf("models in the streams: %+v", wantModels)
	}
	for m, w := range wantModels {
		if g := gotModels[m]; g.InputTokens != w.InputTokens || g.OutputTokens != w.OutputTokens || g.Cost == 0 {
			t.Errorf("model %s: ledger %+v, streams %+v", m, g, w)
		}
	}
	total := byRun[""]
	if n := int64(len(e.llm.Requests())); total.Calls != n || total.Unpriced != 0 {
		t.Errorf("the ledger holds %d LLM calls (%d unpriced); the scripted LLM answered %d", total.Calls, total.Unpriced, n)
	}
	tools := 0
	for _, s := range ends {
		tools += s.toolResults
	}
	if total.ToolCalls != int64(tools) || tools == 0 {
		t.Errorf("the ledger holds %d tool calls; the streams showed %d", total.ToolCalls, tools)
	}
	// Every stream said what it cost (the by-run sums above hold the
	// costs too: a run resumed under its own id adds up its parts).
	for _, s := range ends {
		if s.cost == "" {
			t.Errorf("run %s: no cost on its terminal event", s.runID)
		}
	}

	// Prometheus: by chain and model, never a user.
	_, metrics, _ := e.do("GET", "/metrics", nil)
	var usageLines []string
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "ruleagent_usage_") {
			usageLines = append(usageLines, line)
		}
	}
	for _, want := range []string{`ruleagent_usage_llm_calls_total{chain="router",model="test-model"}`, `model="backup-*"`,
		`ruleagent_usage_tokens_total{chain="tools",kind="input",model="test-model"}`, `ruleagent_usage_cost_total{chain="fallback",currency="USD",model="backup-*"}`,
		`ruleagent_usage_tool_seconds_total{chain="tools",tool_type="agent"}`} {
		if !slices.ContainsFunc(usageLines, func(l string) bool { return strings.Contains(l, want) }) {
			t.Errorf("/metrics has no %s:\n%s", want, strings.Join(usageLines, "\n"))
		}
	}
	for _, l := range usageLines {
		if strings.Contains(l, `"u1"`) || strings.Contains(l, "user") || strings.Contains(l, "thread") || strings.Contains(l, "run-") {
			t.Errorf("a usage metric is labelled by user, thread or run: %s", l)
		}
	}
}
