package server

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/mcpserve"
)

// metaUsage is a CallToolResult's _meta as a client reads it: the run's
// id and its usage and cost under mcpserve.UsageMetaKey.
type metaUsage struct {
	RunID string `json:"runId"`
	Run   *struct {
		Usage    []events.TokenUsage `json:"usage"`
		Cost     string              `json:"cost"`
		Currency string              `json:"currency"`
	} `json:"io.github.ruleagent/usage"`
}

func readMetaUsage(t *testing.T, where string, meta any) metaUsage {
	t.Helper()
	raw, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m metaUsage
	if err := json.Unmarshal(raw, &m); err != nil || m.Run == nil {
		t.Fatalf("%s: no %s in _meta: %s (%v)", where, mcpserve.UsageMetaKey, raw, err)
	}
	return m
}

// TestMCPResultsCarryTheirCost: with a price table, a chain tool's result
// carries its run's usage and cost in _meta under the namespaced key, the
// figures of the run's RUN_FINISHED (a run of the same scripted agent over
// the run route) and of the ledger for the result's runId: a 2026-07-28
// plain call and task (tasks/get) over HTTP, and a 2025-11-25 call from
// mcp-go's streamable HTTP client.
func TestMCPResultsCarryTheirCost(t *testing.T) {
	e, l := newUsageEnv(t, "memory", nil, Options{})
	code, body, err := e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend", "stream": true})
	if err != nil || code != 200 {
		t.Fatalf("streamed run: %d %v %s", code, err, body)
	}
	finished := readStream(t, body, "", "spend")
	if finished.terminal != "RUN_FINISHED" || finished.cost == "" || len(finished.usage) == 0 {
		t.Fatalf("the run route's run: %+v", finished)
	}
	url := e.base + "/mcp"
	check := func(where string, m metaUsage) {
		t.Helper()
		if !reflect.DeepEqual(m.Run.Usage, finished.usage) || m.Run.Cost != finished.cost || m.Run.Currency != "USD" {
			t.Errorf("%s: _meta usage %+v cost %q %q, want RUN_FINISHED's %+v %q USD", where, m.Run.Usage, m.Run.Cost, m.Run.Currency,
				finished.usage, finished.cost)
		}
		rep, err := l.Query(t.Context(), ledger.Query{RunID: m.RunID, Since: time.Now().Add(-time.Hour), Until: time.Now().Add(time.Minute)})
		if want, _ := ledger.ParseAmount(m.Run.Cost); err != nil || m.RunID == "" || rep.Total.Cost != want {
			t.Errorf("%s: the ledger holds %v for run %q (%v), _meta says %s", where, rep.Total.Cost, m.RunID, err, m.Run.Cost)
		}
	}

	plain, perr := modernCall(t, url, "tools/call", map[string]any{"name": "spend", "arguments": map[string]any{"message": "spend"}}, map[string]any{})
	if perr != nil || plain["isError"] == true {
		t.Fatalf("plain call: %v %v", plain, perr)
	}
	check("2026-07-28 call", readMetaUsage(t, "2026-07-28 call", plain["_meta"]))

	created, perr := modernCall(t, url, "tools/call", map[string]any{"name": "spend", "arguments": map[string]any{"message": "spend"}}, withTasks)
	if perr != nil || created["resultType"] != "task" {
		t.Fatalf("task call: %v %v", created, perr)
	}
	done := pollTask(t, url, created["taskId"].(string), func(m map[string]any) bool { return m["status"] == "completed" })
	res, _ := done["result"].(map[string]any)
	check("task result", readMetaUsage(t, "task result", res["_meta"]))

	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	init.Params.ClientInfo = mcp.Implementation{Name: "ruleagent-test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "spend", map[string]any{"message": "spend"}
	legacy, err := c.CallTool(ctx, req)
	if err != nil || legacy.IsError || legacy.Meta == nil {
		t.Fatalf("2025-11-25 call: %+v %v", legacy, err)
	}
	check("2025-11-25 call", readMetaUsage(t, "2025-11-25 call", legacy.Meta.AdditionalFields))
}

// TestMCPFailedResultCarriesItsCost: a run that fails after spending (its
// chain's daily budget crossed by its third turn, the fourth refused)
// answers isError with errorCode limit_exceeded and, in _meta, the usage
// and cost its RUN_ERROR carries.
func TestMCPFailedResultCarriesItsCost(t *testing.T) {
	budgets, err := ledger.ParseBudgets([]byte(`{"chains": {"spend": {"tokensPerDay": 1000}, "spend2": {"tokensPerDay": 1000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newUsageEnv(t, "memory", budgets, Options{})
	code, body, err := e.post("/api/v1/chains/spend/run", map[string]any{"input": "spend", "stream": true})
	if err != nil || code != 200 {
		t.Fatalf("streamed run: %d %v %s", code, err, body)
	}
	failed := readStream(t, body, "", "spend")
	if failed.terminal != "RUN_ERROR" || failed.code != "limit_exceeded" || failed.cost == "" || len(failed.usage) == 0 {
		t.Fatalf("the run route's run: %+v", failed)
	}
	res, perr := modernCall(t, e.base+"/mcp", "tools/call", map[string]any{"name": "spend2", "arguments": map[string]any{"message": "spend"}}, map[string]any{})
	if perr != nil || res["isError"] != true {
		t.Fatalf("call: %v %v", res, perr)
	}
	m := readMetaUsage(t, "failed call", res["_meta"])
	meta, _ := res["_meta"].(map[string]any)
	if meta["errorCode"] != "limit_exceeded" || !reflect.DeepEqual(m.Run.Usage, failed.usage) || m.Run.Cost != failed.cost || m.Run.Currency != "USD" {
		t.Errorf("_meta %v, want errorCode limit_exceeded and RUN_ERROR's usage %+v cost %s USD", meta, failed.usage, failed.cost)
	}
}
