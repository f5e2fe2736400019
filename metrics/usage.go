package metrics

import "github.com/prometheus/client_golang/prometheus"

// Usage collectors, fed by the usage ledger (package ledger) for the runs
// the server records. Their labels are bounded: chain and model only (the
// ledger caps and cleans both), never a user, thread or run id.
var (
	// UsageLLMCalls counts LLM calls by chain and model.
	UsageLLMCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_usage_llm_calls_total", Help: "LLM calls recorded in the usage ledger, by chain and model.",
	}, []string{"chain", "model"})
	// UsageTokens counts tokens by chain, model and kind (input, output,
	// cached_input, reasoning; the last two are parts of the first two).
	UsageTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_usage_tokens_total", Help: "Tokens recorded in the usage ledger, by chain, model and kind.",
	}, []string{"chain", "model", "kind"})
	// UsageCost adds up the cost of priced calls, in the price table's
	// currency (the ledger's own totals are exact; this is a float).
	UsageCost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_usage_cost_total", Help: "Cost of LLM calls by chain and model, in the price table's currency.",
	}, []string{"chain", "model", "currency"})
	// UsageToolSeconds adds up tool call time by chain and tool type.
	UsageToolSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_usage_tool_seconds_total", Help: "Tool call time recorded in the usage ledger, by chain and tool type.",
	}, []string{"chain", "tool_type"})
	// LedgerRecords counts the records written to the ledger's store.
	LedgerRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ruleagent_ledger_records_total", Help: "Usage records written to the ledger's store.",
	})
	// LedgerDropped counts records not written, by reason (queue_full,
	// write_error, closed).
	LedgerDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_ledger_dropped_total", Help: "Usage records not written, by reason.",
	}, []string{"reason"})
	// LedgerWriteSeconds observes the write of one batch of records.
	LedgerWriteSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "ruleagent_ledger_write_seconds", Help: "Time to write one batch of usage records.",
		Buckets: []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5},
	})
)

func init() {
	Registry.MustRegister(UsageLLMCalls, UsageTokens, UsageCost, UsageToolSeconds, LedgerRecords, LedgerDropped, LedgerWriteSeconds)
}
