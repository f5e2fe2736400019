package server

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// runTap is a run's agent.Tap and tools.CallTap: it records (rec; nil
// when the run is not recorded) what a playback of a record (play; nil for
// a live run) or the world answered. A fork has both: its early turns are
// played from the original's record, and it is recorded as a run of its
// own.
type runTap struct {
	rec  *recording
	play *playback

	mu   sync.Mutex
	seen map[string]int // agent keys' bases -> runs so far
}

// StartAgent implements agent.Tap: the key is the chain and node, under
// the key of the agent run whose tool call started it, and a count when
// the same agent runs again in the same place.
func (t *runTap) StartAgent(ctx context.Context, a agent.AgentStart) string {
	base := a.ChainID + ":" + a.NodeID
	if a.Parent != "" {
		base = a.Parent + "/" + a.ToolCallID + ">" + base
	}
	t.mu.Lock()
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	n := t.seen[base]
	t.seen[base] = n + 1
	t.mu.Unlock()
	key := base
	if n > 0 {
		key += "#" + strconv.Itoa(n+1)
	}
	if t.rec != nil {
		t.rec.startAgent(key, a)
	}
	if t.play != nil {
		t.play.startAgent(key, a.Parent, a.RunID)
	}
	return key
}

// Memory implements agent.Tap.
func (t *runTap) Memory(ctx context.Context, key string, phase agent.MemoryPhase, emit func(events.Event),
	run func(emit func(events.Event)) ([]events.Message, error)) ([]events.Message, error) {
	inner := run
	if t.play != nil {
		inner = func(emit func(events.Event)) ([]events.Message, error) {
			return t.play.memory(ctx, key, phase, emit, run)
		}
	}
	if t.rec != nil {
		return t.rec.memory(key, phase, emit, inner)
	}
	return inner(emit)
}

// Turn implements agent.Tap.
func (t *runTap) Turn(ctx context.Context, key string, step int, conv []events.Message, llm *agent.Client) (*agent.Client, error) {
	if t.play == nil {
		return llm, nil
	}
	return t.play.turn(ctx, key, step, conv, llm)
}

// RoundTrip implements agent.Tap.
func (t *runTap) RoundTrip(ctx context.Context, c agent.WireCall, send func() (*http.Response, error)) (*http.Response, error) {
	inner := send
	if t.play != nil {
		inner = func() (*http.Response, error) { return t.play.roundTrip(ctx, c, send) }
	}
	if t.rec != nil {
		return t.rec.roundTrip(c, inner)
	}
	return inner()
}

// ToolCall implements tools.CallTap.
func (t *runTap) ToolCall(ctx context.Context, c tools.TapCall, run func(context.Context) (tools.Result, error)) (tools.Result, error) {
	inner := run
	if t.play != nil {
		inner = func(ctx context.Context) (tools.Result, error) { return t.play.toolCall(ctx, c, run) }
	}
	if t.rec != nil {
		return t.rec.toolCall(ctx, c, inner)
	}
	return inner(ctx)
}

// withTap puts t in the run's context, for its agents and tools.
func withTap(ctx context.Context, t *runTap) context.Context {
	return tools.WithCallTap(agent.WithTap(ctx, t), t)
}
