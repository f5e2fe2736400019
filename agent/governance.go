package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/limits"
)

// Limits are an agent's budgets beyond one run's steps and tool calls
// (Config.MaxStep, MaxToolCalls) and wall time (Config.Timeout). A zero
// value is no limit. See package limits for their names.
type Limits struct {
	// ToolCallsPerHour bounds the tool calls of one session in any hour.
	ToolCallsPerHour int
	// TokensPerRun bounds the tokens of one run, its sub-agents' included.
	TokensPerRun int64
	// TokensPerSession bounds the tokens of one session's runs of this
	// agent, sub-agents included.
	TokensPerSession int64
	// SessionIdle is how long a session's token count is kept after its
	// last addition; 0 means DefaultSessionIdle.
	SessionIdle time.Duration
	// ConcurrentRuns bounds the runs the agent has in progress at once.
	ConcurrentRuns int
	// Store keeps the per-session counters; nil gives the agent a store of
	// its own in memory.
	Store limits.Store
}

// DefaultSessionIdle is how long a session's token count is kept.
const DefaultSessionIdle = 24 * time.Hour

// CodeLimit is the run error code of a limit reached (RunError.Limit says
// which). The wall-time limit keeps its own code, CodeTimeout.
const CodeLimit = "limit_exceeded"

func (l *Limits) fill() {
	if l.SessionIdle <= 0 {
		l.SessionIdle = DefaultSessionIdle
	}
	if l.Store == nil && (l.ToolCallsPerHour > 0 || l.TokensPerSession > 0) {
		l.Store = limits.NewMemory()
	}
}

// MetaThreadGenerated is the message metadata key a server sets ("true")
// when it made the run's threadId up because the caller gave none: such a
// thread is not the caller's session.
const MetaThreadGenerated = "threadGenerated"

// MetaVerifiedUser is tools.MetaVerifiedUser: the verified user a run is
// for, set by the server only, passed on to the chains it calls.
const MetaVerifiedUser = tools.MetaVerifiedUser

// sessionKeyOf is the key of the run's per-session limits: the thread the
// caller gave (not one a server made up), else the user, else the run
// itself.
func sessionKeyOf(in *Input) string {
	switch {
	case in.ThreadID != "" && in.Point.Metadata[MetaThreadGenerated] != "true":
		return in.ThreadID
	case in.Point.UserID != "":
		return in.Point.UserID
	}
	return in.RunID
}

func (r *run) limitKey(limit string) string {
	return limits.Key(r.point.ChainID, r.point.NodeID, r.sessionKey, limit)
}

// sessionCalls is the run's share of the session's hourly tool calls.
func (r *run) sessionCalls() tools.SessionCalls {
	l := &r.agent.cfg.Limits
	return tools.SessionCalls{Store: l.Store, Key: r.limitKey(limits.ToolCallsPerHour), PerHour: l.ToolCallsPerHour}
}

// admitted runs fn unless a limit refuses the run before it starts: the
// agent's concurrent runs, or a session that spent its tokens already. It
// adds the run's tokens to its session's count at the end.
func (r *run) admitted(ctx context.Context, fn func(context.Context) (*aspects.RunOutput, error)) (*aspects.RunOutput, error) {
	a, l := r.agent, &r.agent.cfg.Limits
	if l.ConcurrentRuns > 0 {
		n := a.running.Add(1)
		defer a.running.Add(-1)
		if n > int64(l.ConcurrentRuns) {
			return nil, limitError(limits.Hit(limits.ConcurrentRuns, int64(l.ConcurrentRuns), n-1,
				"the agent already has %d runs in progress, its limit (limits.%s); try again when one has finished", n-1, limits.ConcurrentRuns))
		}
	}
	if l.TokensPerSession > 0 {
		defer r.addSessionTokens(context.WithoutCancel(ctx))
		total, err := l.Store.Total(ctx, r.limitKey(limits.TokensPerSession))
		if err != nil {
			return nil, &RunError{Code: CodeLimit, Limit: limits.TokensPerSession, Err: fmt.Errorf("the session's token budget cannot be checked: %w", err)}
		}
		if total >= l.TokensPerSession {
			return nil, r.sessionSpent(total)
		}
	}
	return fn(ctx)
}

// checkBudget is asked before every LLM turn: a run, or its session, or
// its user or chain today, that has spent its budget ends here, with the
// limit named.
func (r *run) checkBudget(ctx context.Context) error {
	// The budgets over time (a user's or a chain's day) first: the
	// ledger's Recorder decides.
	if err := r.ledger.Admit(ctx); err != nil {
		return err
	}
	l := &r.agent.cfg.Limits
	if l.TokensPerRun <= 0 && l.TokensPerSession <= 0 {
		return nil
	}
	used := tokensOf(r.ledger.Total())
	if l.TokensPerRun > 0 && used >= l.TokensPerRun {
		return limitError(limits.Hit(limits.TokensPerRun, l.TokensPerRun, used,
			"the run has used %d tokens, reaching its budget of %d (limits.%s)", used, l.TokensPerRun, limits.TokensPerRun))
	}
	if l.TokensPerSession > 0 {
		total, err := r.addSessionTokens(ctx)
		if err != nil {
			return &RunError{Code: CodeLimit, Limit: limits.TokensPerSession, Err: fmt.Errorf("the session's token budget cannot be checked: %w", err)}
		}
		if total >= l.TokensPerSession {
			return r.sessionSpent(total)
		}
	}
	return nil
}

func (r *run) sessionSpent(total int64) error {
	max := r.agent.cfg.Limits.TokensPerSession
	return limitError(limits.Hit(limits.TokensPerSession, max, total,
		"this session has used %d tokens with this agent, reaching its budget of %d (limits.%s)", total, max, limits.TokensPerSession))
}

// addSessionTokens adds what the run used since the last call to its
// session's count, and returns the count.
func (r *run) addSessionTokens(ctx context.Context) (int64, error) {
	l := &r.agent.cfg.Limits
	used := tokensOf(r.ledger.Total())
	delta := used - r.sessionAdded
	r.sessionAdded = used
	return l.Store.Add(ctx, r.limitKey(limits.TokensPerSession), delta, l.SessionIdle)
}

func tokensOf(u aspects.Usage) int64 {
	return max(u.TotalTokens, u.PromptTokens+u.CompletionTokens)
}

func limitError(ex *limits.Exceeded) *RunError {
	return &RunError{Code: CodeLimit, Limit: ex.Limit, Err: ex}
}

// limitReached counts a wall-time limit in the metrics (the others are
// counted where they are detected) and writes the audit record of any
// run-level limit.
func (r *run) limitReached(re *RunError, elapsed time.Duration) {
	rec := audit.Record{Kind: audit.KindLimit, RunID: r.point.RunID, ParentRunID: r.in.ParentRunID, ThreadID: r.point.ThreadID,
		SessionKey: r.sessionKey, UserID: r.point.UserID, ChainID: r.point.ChainID, NodeID: r.point.NodeID,
		Outcome: audit.OutcomeLimit, Limit: re.Limit, Error: audit.ErrorText(r.scrub(re.Error())), DurationMs: elapsed.Milliseconds()}
	var ex *limits.Exceeded
	if errors.As(re, &ex) {
		rec.Max, rec.Used = ex.Max, ex.Used
	}
	if re.Code == CodeTimeout {
		metrics.LimitHits.WithLabelValues(limits.Timeout).Inc()
		rec.Max, rec.Used = r.agent.cfg.Timeout.Milliseconds(), elapsed.Milliseconds()
	}
	if r.agent.cfg.Audit != nil {
		r.agent.cfg.Audit.Record(rec)
	}
}

// offered is the tools array of this turn: the agent's own tools its
// policies allow (the set may have changed since the last turn), then the
// caller's. It is rebuilt only when the agent's part changed.
func (r *run) offered() []byte {
	set := r.agent.cfg.Tools
	own, _ := set.Offered(r.tools)
	if r.toolsJSON != nil && len(own) == len(r.ownJSON) && (len(own) == 0 || &own[0] == &r.ownJSON[0]) {
		return r.toolsJSON
	}
	r.ownJSON = own
	// A denied tool of the agent's still takes its name: a caller cannot
	// slip its own tool in under the name of one the policy refused.
	r.toolsJSON = r.caller.toolsJSON(own, func(name string) bool { return set.Lookup(name) != nil })
	if r.toolsJSON == nil {
		r.toolsJSON = []byte{}
	}
	return r.toolsJSON
}

// offeredNames are the tool names of this turn, for the BeforeLLM aspects.
func (r *run) offeredNames() []string {
	_, names := r.agent.cfg.Tools.Offered(r.tools)
	names = slices.Clone(names)
	if r.caller != nil {
		for _, t := range r.caller.Tools {
			if r.agent.cfg.Tools.Lookup(t.Name) == nil {
				names = append(names, t.Name)
			}
		}
	}
	return names
}
