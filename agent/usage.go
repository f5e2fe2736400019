package agent

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
)

// Ledger adds up a run's token usage per provider and model. A sub-agent's
// run keeps its own ledger whose parent is the calling run's, so that its
// calls count in every run above it, as AG-UI's accounting asks. A caller
// that runs a whole chain (the server) puts a ledger in the context with
// WithLedger and reads the total of every agent in the chain from it.
// It is safe for concurrent use (parallel tool calls run sub-agents at once).
type Ledger struct {
	parent *Ledger
	// rec, on a root ledger, receives every call (see Recorder).
	rec   Recorder
	mu    sync.Mutex
	byKey []usageEntry
}

type usageEntry struct {
	provider, model string
	u               aspects.Usage
}

// NewLedger returns an empty ledger whose additions also reach parent (nil
// for none).
func NewLedger(parent *Ledger) *Ledger { return &Ledger{parent: parent} }

type ledgerKey struct{}

// WithLedger returns ctx carrying l.
func WithLedger(ctx context.Context, l *Ledger) context.Context {
	return context.WithValue(ctx, ledgerKey{}, l)
}

// LedgerFrom returns the ledger in ctx, or nil.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerKey{}).(*Ledger)
	return l
}

// Add records u for provider and model here and in every parent, and
// reports the call to the root's Recorder (see AddCall).
func (l *Ledger) Add(provider, model string, u aspects.Usage) {
	l.AddCall(LLMCall{Provider: provider, Model: model, Usage: u})
}

func (l *Ledger) add(provider, model string, u aspects.Usage) {
	for ; l != nil; l = l.parent {
		l.mu.Lock()
		i := slices.IndexFunc(l.byKey, func(e usageEntry) bool { return e.provider == provider && e.model == model })
		if i < 0 {
			l.byKey = append(l.byKey, usageEntry{provider: provider, model: model})
			i = len(l.byKey) - 1
		}
		l.byKey[i].u.Add(u)
		l.mu.Unlock()
	}
}

// Total returns the sum over every provider and model.
func (l *Ledger) Total() aspects.Usage {
	var t aspects.Usage
	if l == nil {
		return t
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.byKey {
		t.Add(e.u)
	}
	return t
}

// Entries returns the usage as AG-UI TokenUsage entries, one per provider
// and model in the order first seen; nil when nothing was used.
func (l *Ledger) Entries() []events.TokenUsage {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []events.TokenUsage
	for _, e := range l.byKey {
		u := e.u
		if u.PromptTokens == 0 && u.CompletionTokens == 0 && u.TotalTokens == 0 {
			continue
		}
		total := u.PromptTokens + u.CompletionTokens
		out = append(out, events.TokenUsage{Provider: e.provider, Model: e.model, InputTokens: u.PromptTokens,
			OutputTokens: u.CompletionTokens, TotalTokens: total, ReasoningTokens: u.ReasoningTokens,
			CachedInputTokens: u.CachedTokens})
	}
	return out
}

// providerOf names the provider of an endpoint URL by its host, the way
// AG-UI usage entries tell providers apart.
func providerOf(url string) string {
	host := url
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	return host
}
