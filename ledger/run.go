package ledger

import (
	"context"
	"sync"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/metrics"
)

// RunInfo is what the server knows of a run when it starts it.
type RunInfo struct {
	RunID, ChainID, ThreadID, UserID, Source string
}

// Run is one run's recorder (agent.Recorder): the server puts it on the
// run's root ledger (agent.NewRecordingLedger), so it sees each LLM call
// and tool call of the run once, its sub-agents' included.
type Run struct {
	l    *Ledger
	info RunInfo

	mu sync.Mutex
	// runID is the id the run is reported under now: a run resumed after
	// a pause under another id reports what follows under that one.
	runID string
	// seg is the cost of the calls reported under runID, for its
	// terminal event; segPriced says whether any of them had a price.
	seg       Nanos
	segPriced bool
	// dry and dryRun: see Dry.
	dry    bool
	dryRun func(runID string) bool
}

// Dry makes the calls of the agent runs byRun selects (every call, when
// byRun is nil) cost nothing now, because a replay answers them from a
// record: they are priced for the run's events as before, but neither
// written nor counted, and a run that is dry as a whole is not held to
// the budgets. A nil Run does nothing.
func (r *Run) Dry(byRun func(runID string) bool) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.dry, r.dryRun = true, byRun
	r.mu.Unlock()
}

// isDry reports whether the calls of agent run runID are dry.
func (r *Run) isDry(runID string) bool {
	r.mu.Lock()
	dry, by := r.dry, r.dryRun
	r.mu.Unlock()
	return dry && (by == nil || by(runID))
}

var _ agent.Recorder = (*Run)(nil)

// Run returns the recorder of a run.
func (l *Ledger) Run(info RunInfo) *Run {
	return &Run{l: l, info: info, runID: info.RunID}
}

// Segment says the run is now reported to its client as runID (a resumed
// run's new id, or its own): the calls that follow are recorded under it,
// and SegmentCost starts again from zero. A nil Run does nothing.
func (r *Run) Segment(runID string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.runID, r.seg, r.segPriced = runID, 0, false
	r.mu.Unlock()
}

// SegmentCost is what the calls since the last Segment cost, and the
// currency; empty when none of them had a price (or r is nil).
func (r *Run) SegmentCost() (cost, currency string) {
	if r == nil {
		return "", ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.segPriced {
		return "", ""
	}
	return r.seg.String(), r.l.prices.Currency
}

// base is a record of the run, as it is reported now.
func (r *Run) base(kind string) Record {
	r.mu.Lock()
	id := r.runID
	r.mu.Unlock()
	return Record{Kind: kind, Time: r.l.now().UTC(), RunID: id, ChainID: r.info.ChainID, ThreadID: r.info.ThreadID,
		UserID: r.info.UserID, Source: r.info.Source}
}

// agentOf fills in the agent that made a call when it is not the run's
// own.
func (r *Run) agentOf(rec *Record, runID, chainID, nodeID string, step int) {
	if runID != r.info.RunID {
		rec.AgentRunID = runID
	}
	if chainID != r.info.ChainID {
		rec.AgentChainID = chainID
	}
	rec.NodeID, rec.Step = nodeID, step
}

// LLMCall implements agent.Recorder.
func (r *Run) LLMCall(c agent.LLMCall) (cost, currency string) {
	rec := r.base(KindLLM)
	r.agentOf(&rec, c.RunID, c.ChainID, c.NodeID, c.Step)
	rec.Provider, rec.Model = c.Provider, c.Model
	rec.InputTokens, rec.OutputTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	rec.CachedInputTokens, rec.ReasoningTokens = c.Usage.CachedTokens, c.Usage.ReasoningTokens
	rec.DurationMs = c.Duration.Milliseconds()
	p := r.l.prices.Lookup(c.Provider, c.Model)
	if p != nil {
		rec.Cost, rec.Price = p.Cost(c.Usage), p.Model
		r.mu.Lock()
		r.seg += rec.Cost
		r.segPriced = true
		r.mu.Unlock()
		cost, currency = rec.Cost.String(), r.l.prices.Currency
	}
	if r.isDry(c.RunID) {
		return cost, currency
	}
	r.l.count(&rec, p)
	r.l.enqueue(rec)
	return cost, currency
}

// maxToolName bounds a tool name in a record: a model may call a tool
// by any name, and a name it made up is recorded as it called it.
const maxToolName = 128

// ToolCall implements agent.Recorder.
func (r *Run) ToolCall(c agent.ToolCallUse) {
	if r.isDry(c.RunID) {
		return
	}
	rec := r.base(KindTool)
	r.agentOf(&rec, c.RunID, c.ChainID, c.NodeID, c.Step)
	rec.Tool, rec.ToolType = c.Name, c.Type
	if len(rec.Tool) > maxToolName {
		rec.Tool = rec.Tool[:maxToolName]
	}
	rec.IsError, rec.ErrorKind = c.IsError, c.ErrorKind
	rec.DurationMs = c.Duration.Milliseconds()
	metrics.UsageToolSeconds.WithLabelValues(r.l.labels.chain(r.info.ChainID), toolTypeLabel(c.Type)).Add(c.Duration.Seconds())
	r.l.enqueue(rec)
}

// Admit implements agent.Recorder: the run's user and chain must not
// have spent their daily budgets.
func (r *Run) Admit(ctx context.Context) error {
	r.mu.Lock()
	replay := r.dry && r.dryRun == nil
	r.mu.Unlock()
	if replay {
		return nil
	}
	return r.l.Admit(ctx, r.info.UserID, r.info.ChainID)
}

// count adds an LLM call to the Prometheus counters.
func (l *Ledger) count(rec *Record, p *Price) {
	chain, model := l.labels.chain(rec.ChainID), l.labels.model(p, rec.Model)
	metrics.UsageLLMCalls.WithLabelValues(chain, model).Inc()
	for _, k := range [...]struct {
		kind string
		n    int64
	}{{"input", rec.InputTokens}, {"output", rec.OutputTokens}, {"cached_input", rec.CachedInputTokens}, {"reasoning", rec.ReasoningTokens}} {
		if k.n > 0 {
			metrics.UsageTokens.WithLabelValues(chain, model, k.kind).Add(float64(k.n))
		}
	}
	if p != nil && rec.Cost > 0 {
		metrics.UsageCost.WithLabelValues(chain, model, l.prices.Currency).Add(float64(rec.Cost) / nanosPerUnit)
	}
}
