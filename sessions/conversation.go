package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
)

// Config is an agent's session configuration.
type Config struct {
	Scope Scope
	// Agent names the agent's sessions (the chain id unless configured).
	Agent  string
	Memory Policy
	// ToolResultLimit is PolicyToolSummaries' threshold, in characters.
	ToolResultLimit int
	Budget          Budget
	// Compaction, when set, summarises the oldest turns of a history over
	// its Budget instead of dropping them.
	Compaction *CompactionConfig
	// TTL removes a session idle this long (0: never).
	TTL time.Duration
}

// ErrNothingNew reports a request whose messages the session already holds
// in full: there is nothing for the agent to answer.
var ErrNothingNew = errors.New("the request holds no new message: the session already has every message it sent (send the new user message, or a result of a pending tool call)")

// Conversation is one run's hold on a session: Begin takes the session's
// lease and reads it; Recall and Keep (agent.Memory) give the run its
// history and store the turn; Release gives the lease back.
type Conversation struct {
	store Store
	cfg   *Config
	lease Lease
	rec   *Record
	rc    Reconciled
	runID string
	model string

	// base is the history the run continues (after its budget) followed by
	// the run's new messages; summary goes before it.
	base    []events.Message
	summary string
}

// Run identifies the run that continues a session.
type Run struct {
	RunID   string
	ChainID string
	NodeID  string
	// Owner is the verified user the run is for ("" for the operator's
	// token or an unverified caller). A thread session it starts is
	// theirs; one another user started is refused (ErrNotYours).
	Owner string
}

// Begin starts a run on the session of key: it takes the session's lease
// (ErrBusy when another run holds it), reads the session (a new one when
// there is none) and sets the request's messages against its history (see
// Reconcile). The caller must Release the conversation.
func Begin(ctx context.Context, store Store, cfg *Config, key Key, incoming []events.Message, run Run) (*Conversation, error) {
	id := key.ID()
	lease, err := store.Lock(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	rec, err := store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		rec = NewRecord(key)
		if key.Scope == ScopeThread {
			rec.Owner = run.Owner
		}
	case err != nil:
		lease.Release()
		return nil, fmt.Errorf("session %s: %w", id, err)
	}
	if err := rec.checkOwner(run.Owner); err != nil {
		lease.Release()
		return nil, err
	}
	rec.ChainID, rec.NodeID = run.ChainID, run.NodeID
	rec.Fence(lease)
	c := &Conversation{store: store, cfg: cfg, lease: lease, rec: rec, runID: run.RunID, model: rec.Model}
	c.rc = Reconcile(rec.Messages, incoming)
	if len(c.rc.New) == 0 && len(pendingCalls(c.rc.History)) == 0 {
		lease.Release()
		return nil, ErrNothingNew
	}
	return c, nil
}

// ID is the session's id.
func (c *Conversation) ID() string { return c.rec.ID }

// Model is the name of the allowedModels entry the session runs on ("" for
// the agent's own model).
func (c *Conversation) Model() string { return c.model }

// SetModel switches the session's model from this run on; it is stored
// with the run's turn.
func (c *Conversation) SetModel(name string) { c.model = name }

// Release gives the session's lease back.
func (c *Conversation) Release() { c.lease.Release() }

// Lost is closed when the session's lease ends before Release: its
// renewals failed (a frozen or unreachable Redis) or another process took
// it. The run must then stop: its writes are refused (ErrLeaseLost), and
// another run may already continue the session.
func (c *Conversation) Lost() <-chan struct{} { return c.lease.Lost() }

// Recall implements agent.Memory: the request's system messages, the
// summary, the history within its budget (compacted or pruned, said in
// events), then the new messages, repaired so that every tool call is
// answered.
func (c *Conversation) Recall(ctx context.Context, llm *agent.Client, emit func(events.Event)) ([]events.Message, error) {
	hist, summary := c.rc.History, c.rec.Summary
	if c.rc.Replaced {
		summary = ""
	}
	extra := func(s string) (int, int) {
		if s == "" {
			return 0, 0
		}
		m := summaryMessage(s)
		return 1, Tokens(&m)
	}
	b := c.cfg.Budget
	n, t := extra(summary)
	if !b.fits(len(hist)+n, TokensOf(hist)+t) && c.cfg.Compaction != nil {
		var err error
		if hist, summary, err = c.compact(ctx, llm, emit, hist, summary); err != nil {
			return nil, err
		}
		n, t = extra(summary)
	}
	hist, pruned := Prune(hist, b, n, t)
	c.base = Repair(append(append(make([]events.Message, 0, len(hist)+len(c.rc.New)), hist...), c.rc.New...))
	c.summary = summary
	emit(customEvent(EventSession, map[string]any{"id": c.rec.ID, "scope": c.rec.Scope, "messages": len(hist),
		"pruned": pruned, "replaced": c.rc.Replaced, "summary": summary != "", "model": c.model, "turns": c.rec.Turns}))

	out := make([]events.Message, 0, len(c.rc.System)+1+len(c.base))
	out = append(out, c.rc.System...)
	if summary != "" {
		out = append(out, summaryMessage(summary))
	}
	return append(out, c.base...), nil
}

// compact runs a compaction and stores its outcome at once, so that a run
// that fails afterwards does not pay for it again. A compaction the LLM
// fails is said in a warning; the history is then pruned instead.
func (c *Conversation) compact(ctx context.Context, llm *agent.Client, emit func(events.Event), hist []events.Message, summary string) ([]events.Message, string, error) {
	before := TokensOf(hist)
	if summary != "" {
		m := summaryMessage(summary)
		before += Tokens(&m)
	}
	kept, sum, rec, err := compact(ctx, llm, c.cfg.Compaction, hist, summary)
	switch {
	case errors.Is(err, errNothingToCompact):
		return hist, summary, nil
	case err != nil:
		c.warn(emit, "compaction failed, so the oldest turns were dropped instead: "+err.Error())
		return hist, summary, nil
	}
	m := summaryMessage(sum)
	rec.At, rec.RunID = c.now(), c.runID
	rec.TokensBefore, rec.TokensAfter = before, TokensOf(kept)+Tokens(&m)
	c.rec.Messages, c.rec.Summary = kept, sum
	c.rec.Compactions = append(c.rec.Compactions, rec)
	if len(c.rec.Compactions) > maxCompactions {
		c.rec.Compactions = c.rec.Compactions[len(c.rec.Compactions)-maxCompactions:]
	}
	if err := c.put(ctx); err != nil {
		return nil, "", err
	}
	emit(customEvent(EventCompacted, map[string]any{"id": c.rec.ID, "messages": rec.Messages, "turns": rec.Turns,
		"tokensBefore": rec.TokensBefore, "tokensAfter": rec.TokensAfter, "summary": sum}))
	return kept, sum, nil
}

// Keep implements agent.Memory: it stores the turn (the history the run
// continued, its new messages, and what the memory policy keeps of the
// messages it added) in one atomic write.
func (c *Conversation) Keep(ctx context.Context, added []events.Message, llm *agent.Client, emit func(events.Event)) error {
	if c.base == nil {
		return errors.New("session: Keep before Recall")
	}
	kept := c.apply(ctx, added, llm, emit)
	msgs := make([]events.Message, 0, len(c.base)+len(kept))
	msgs = append(append(msgs, c.base...), kept...)
	if c.cfg.Compaction == nil {
		n := 0
		if c.summary != "" {
			n = 1
		}
		m := summaryMessage(c.summary)
		msgs, _ = Prune(msgs, c.cfg.Budget, n, n*Tokens(&m))
	}
	for i := range msgs {
		if msgs[i].ID == "" {
			msgs[i].ID = fmt.Sprintf("%s-m%d", c.runID, i)
		}
	}
	c.rec.Messages, c.rec.Summary, c.rec.Model = msgs, c.summary, c.model
	c.rec.Turns++
	return c.put(ctx)
}

// put stores the record with its times.
func (c *Conversation) put(ctx context.Context) error {
	now := c.now()
	if c.rec.Created.IsZero() {
		c.rec.Created = now
	}
	c.rec.Updated = now
	c.rec.Expires = time.Time{}
	if c.cfg.TTL > 0 {
		c.rec.Expires = now.Add(c.cfg.TTL)
	}
	if err := c.store.Put(ctx, c.rec); err != nil {
		return fmt.Errorf("session %s: %w", c.rec.ID, err)
	}
	return nil
}
