package components

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/metrics"
)

func TestRunsAreCounted(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Reply("counted")))
	id, dsl := agentChain(t, srv.URL, nil)
	e := newEngine(t, id, dsl)
	runs := testutil.ToFloat64(metrics.Runs.WithLabelValues("success"))
	reqs := testutil.ToFloat64(metrics.LLMRequests.WithLabelValues("test-model", "ok"))
	oneTerminal(t, send(t, context.Background(), e, "hi", nil, true), types.Success)
	if testutil.ToFloat64(metrics.Runs.WithLabelValues("success")) != runs+1 || testutil.ToFloat64(metrics.LLMRequests.WithLabelValues("test-model", "ok")) != reqs+1 {
		t.Fatal("the metrics aspect did not count the run")
	}
}
