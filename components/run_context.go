package components

import (
	"context"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/telemetry"
)

// RuleGo hands a node its message's context combined with the engine's
// shutdown context, in a context type of its own. A run's timeout derived
// from that type costs a goroutine per run (context.WithTimeout watches a
// parent it does not know in a goroutine), and at a thousand concurrent
// runs those goroutines and their stacks add up. WithRunContext lets the
// caller of a chain give its agent nodes its own context instead: the
// caller cancels it (the server's runs registry does, on cancel and on
// shutdown), so nothing is lost by not watching the engine's.

type runContextKey struct{}

type runContext struct{ ctx context.Context }

// WithRunContext returns ctx, marked as the context the agent nodes of the
// chain run it is given to (types.WithContext) use as it is. Chains those
// nodes call as tools get RuleGo's context again.
func WithRunContext(ctx context.Context) context.Context {
	h := &runContext{}
	h.ctx = context.WithValue(ctx, runContextKey{}, h)
	return h.ctx
}

// withoutRunContext hides a run context's mark from a nested chain run:
// its context holds values of its own on top of the run's.
func withoutRunContext(ctx context.Context) context.Context {
	if h, _ := ctx.Value(runContextKey{}).(*runContext); h == nil {
		return ctx
	}
	return context.WithValue(ctx, runContextKey{}, (*runContext)(nil))
}

// nodeContext is the context an agent node runs its message in.
func nodeContext(rc types.RuleContext) context.Context {
	ctx := rc.GetContext()
	if ctx == nil {
		return context.Background()
	}
	if h, _ := ctx.Value(runContextKey{}).(*runContext); h != nil {
		// The node's step span (NodeSpans) stays the parent of its work.
		return telemetry.WithSpanOf(h.ctx, ctx)
	}
	return ctx
}
