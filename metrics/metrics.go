// Package metrics holds ruleagent's Prometheus collectors in one registry of
// their own, served by the server at /metrics. Collectors are process-wide,
// as Prometheus intends; they are labelled by tool and model, never keyed by
// chain in Go state.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is the registry every ruleagent collector is registered in.
var Registry = prometheus.NewRegistry()

var (
	// Runs counts agent runs by outcome (success, error, cancelled).
	Runs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_runs_total", Help: "Agent runs by outcome.",
	}, []string{"outcome"})
	// RunDuration observes run durations.
	RunDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "ruleagent_run_duration_seconds", Help: "Agent run duration.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	})
	// LLMRequests counts LLM requests by model and outcome.
	LLMRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_llm_requests_total", Help: "LLM requests by model and outcome.",
	}, []string{"model", "outcome"})
	// Tokens counts tokens by model and kind (prompt, completion, cached, reasoning).
	Tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_llm_tokens_total", Help: "LLM tokens by model and kind.",
	}, []string{"model", "kind"})
	// Chunks counts streamed chunks.
	Chunks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ruleagent_stream_chunks_total", Help: "Streamed LLM chunks.",
	})
	// ToolCalls counts tool calls by tool and outcome (ok, error, or the
	// error kind such as permission_denied).
	ToolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_tool_calls_total", Help: "Tool calls by tool and outcome.",
	}, []string{"tool", "outcome"})
	// ToolDuration observes tool call durations by tool.
	ToolDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ruleagent_tool_call_duration_seconds", Help: "Tool call duration by tool.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120},
	}, []string{"tool"})
	// ToolOutputBytes counts bytes of tool output returned to the model.
	ToolOutputBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_tool_output_bytes_total", Help: "Bytes of tool output returned to the model, by tool.",
	}, []string{"tool"})
)

// Server collectors: runs of whole chains as the server starts them, and
// what is open right now.
var (
	// ChainRuns counts chain runs by chain, source (run, agui, openai, mcp,
	// cli) and outcome (success, error, cancelled).
	ChainRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_chain_runs_total", Help: "Chain runs by chain, source and outcome.",
	}, []string{"chain", "source", "outcome"})
	// ChainRunDuration observes chain run durations by chain.
	ChainRunDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "ruleagent_chain_run_duration_seconds", Help: "Chain run duration by chain.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
	}, []string{"chain"})
	// ActiveRuns is the number of chain runs in progress.
	ActiveRuns = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ruleagent_active_runs", Help: "Chain runs in progress.",
	})
	// ActiveStreams is the number of open event streams by kind (sse,
	// websocket).
	ActiveStreams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "ruleagent_active_streams", Help: "Open event streams by kind (sse, websocket).",
	}, []string{"kind"})
	// StreamClientsDropped counts the clients of event streams dropped for
	// being too slow, by kind (sse, websocket) and reason: queue_full (more
	// than the stream's queue behind), write_timeout (a write made no
	// progress for the write timeout: the client stopped reading). A
	// client that goes away is not counted.
	StreamClientsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_stream_clients_dropped_total", Help: "Event stream clients dropped for being too slow, by kind and reason.",
	}, []string{"kind", "reason"})
)

// Governance collectors: limits reached, tool policy refusals and the
// audit log.
var (
	// LimitHits counts limits reached, by limit (maxToolCalls,
	// toolCallsPerHour, tokensPerRun, tokensPerSession, concurrentRuns,
	// timeout).
	LimitHits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_limit_hits_total", Help: "Limits reached, by limit.",
	}, []string{"limit"})
	// PolicyDenials counts tool calls a tool policy refused, by the rule
	// that refused them (deny, subagentDeny, allow, profile).
	PolicyDenials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_policy_denials_total", Help: "Tool calls refused by a tool policy, by rule.",
	}, []string{"rule"})
	// AuditRecords counts the records written to the audit log.
	AuditRecords = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "ruleagent_audit_records_total", Help: "Records written to the audit log.",
	})
	// AuditDropped counts the audit records that could not be written, by
	// reason (queue_full, write_error, closed).
	AuditDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ruleagent_audit_dropped_total", Help: "Audit records not written, by reason.",
	}, []string{"reason"})
)

func init() {
	Registry.MustRegister(LimitHits, PolicyDenials, AuditRecords, AuditDropped)
	Registry.MustRegister(ChainRuns, ChainRunDuration, ActiveRuns, ActiveStreams, StreamClientsDropped)
	Registry.MustRegister(Runs, RunDuration, LLMRequests, Tokens, Chunks, ToolCalls, ToolDuration, ToolOutputBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Handler serves the registry in the Prometheus text format.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
}
