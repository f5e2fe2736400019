// Package limits holds what the agent's limits and budgets share: the names
// of the limits, the typed error of a limit reached (counted in
// ruleagent_limit_hits_total), and the Store that keeps the counters that
// outlive one run (tool calls per session per hour, tokens per session).
package limits

import (
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/metrics"
)

// Names of the limits, as they appear in the node's configuration, in
// errors, in the metrics' limit label and in the audit log.
const (
	// MaxToolCalls bounds the tool calls of one run.
	MaxToolCalls = "maxToolCalls"
	// ToolCallsPerHour bounds the tool calls of one session in any hour.
	ToolCallsPerHour = "toolCallsPerHour"
	// TokensPerRun bounds the tokens of one run, its sub-agents' included.
	TokensPerRun = "tokensPerRun"
	// TokensPerSession bounds the tokens of one session's runs.
	TokensPerSession = "tokensPerSession"
	// ConcurrentRuns bounds the runs one agent node has in progress.
	ConcurrentRuns = "concurrentRuns"
	// Timeout bounds the wall time of one run.
	Timeout = "timeout"
)

// ErrExceeded is the kind of every limit reached; the tools package names
// it ErrLimitExceeded.
var ErrExceeded = errors.New("limit exceeded")

// Exceeded is a limit reached: errors.Is(err, ErrExceeded) holds, and
// errors.As gives the limit, its maximum and what was used.
type Exceeded struct {
	Limit string
	Max   int64
	Used  int64
	// Msg explains it to the model or the user, naming the limit.
	Msg string
}

func (e *Exceeded) Error() string { return ErrExceeded.Error() + ": " + e.Msg }

func (e *Exceeded) Unwrap() error { return ErrExceeded }

// Hit returns the error of a limit reached and counts it in
// ruleagent_limit_hits_total. The message is formatted from format and
// args; it should say what was used, what the limit is, and what to do.
func Hit(limit string, max, used int64, format string, args ...any) *Exceeded {
	metrics.LimitHits.WithLabelValues(limit).Inc()
	return &Exceeded{Limit: limit, Max: max, Used: used, Msg: fmt.Sprintf(format, args...)}
}
