package agent

import (
	"context"
	"net/http"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/tools"
)

// Tap sees, and may answer in the world's place, what makes two runs of
// one chain on one input differ: the LLM's answers (each HTTP attempt,
// retries and failover included), the conversation a session recalls and
// keeps, and (tools.CallTap) the tools' results. The server's run
// recording implements it, and so do its replay and fork. It travels in
// the run's context (WithTap); a run without one pays one context lookup
// per agent run.
type Tap interface {
	// StartAgent names an agent run as it starts: the key under which its
	// LLM calls, tool calls and memory are recorded and found again. Two
	// runs of one chain on one input must get the same keys, so a key is
	// made of what the chain says (chain and node ids) and what the model
	// decided (the tool-call id that started a sub-agent), never of
	// generated ids.
	StartAgent(ctx context.Context, a AgentStart) string
	// Memory runs a session's Recall or Keep (see Memory), which may call
	// the LLM and emit events through the emit it is given, and returns
	// the messages Recall gave. A recording keeps both; a replay gives
	// them back without running it.
	Memory(ctx context.Context, key string, phase MemoryPhase, emit func(events.Event),
		run func(emit func(events.Event)) ([]events.Message, error)) ([]events.Message, error)
	// Turn is told each LLM turn of an agent run before it is sent, with
	// its conversation (the loop's own: an edit of an element stays for
	// the turns after) and the client that will answer it, and returns
	// the client to use: a fork changes both from its step on.
	Turn(ctx context.Context, key string, step int, conv []events.Message, llm *Client) (*Client, error)
	// RoundTrip sends one HTTP request of an LLM call with send, or
	// answers it. The response is read and closed as send's would be.
	RoundTrip(ctx context.Context, c WireCall, send func() (*http.Response, error)) (*http.Response, error)
}

// AgentStart describes an agent run to Tap.StartAgent.
type AgentStart struct {
	// Parent is the key of the agent run whose tool call started this one
	// (a sub-agent, or an agent in a rule-chain tool's chain); "" for
	// none. ToolCallID is that call.
	Parent     string
	ToolCallID string
	ChainID    string
	NodeID     string
	// RunID is the run's own id, generated: what its events carry.
	RunID string
}

// MemoryPhase says which side of a run a session's memory works on.
type MemoryPhase string

// Memory phases.
const (
	MemoryRecall MemoryPhase = "recall"
	MemoryKeep   MemoryPhase = "keep"
)

// WireCall is one HTTP request of an LLM call, as Tap.RoundTrip sees it.
type WireCall struct {
	// Key is the agent run making the call ("" outside any: an ai/intent
	// node); Step its LLM turn (0 outside the loop: memory compaction).
	Key  string
	Step int
	// URL is the request's URL (the endpoint's /chat/completions).
	URL    string
	Stream bool
	// Body is the request body; it is valid only during the call.
	Body []byte
	// Scrub redacts the run's secrets (nil: the static patterns only).
	Scrub tools.Scrubber
}

type tapKey struct{}

// tapScope is what the context carries: the tap, and the agent run and
// turn a call belongs to.
type tapScope struct {
	tap   Tap
	key   string
	step  int
	scrub tools.Scrubber
}

// WithTap returns ctx carrying t for the agent runs under it.
func WithTap(ctx context.Context, t Tap) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, tapKey{}, &tapScope{tap: t})
}

func tapFrom(ctx context.Context) *tapScope {
	s, _ := ctx.Value(tapKey{}).(*tapScope)
	return s
}

// TapKey is the key of the agent run ctx is within ("" for none), for
// the tools' side of a Tap (tools.CallTap).
func TapKey(ctx context.Context) string {
	if s := tapFrom(ctx); s != nil {
		return s.key
	}
	return ""
}

// startTap names the run to its tap, if the context has one, and returns
// the context of the run.
func (r *run) startTap(ctx context.Context) context.Context {
	s := tapFrom(ctx)
	if s == nil {
		return ctx
	}
	a := AgentStart{Parent: s.key, ChainID: r.point.ChainID, NodeID: r.point.NodeID, RunID: r.in.RunID}
	if ci := tools.CallFrom(ctx); ci != nil && s.key != "" {
		a.ToolCallID = ci.ToolCallID
	}
	r.tap = &tapScope{tap: s.tap, key: s.tap.StartAgent(ctx, a), scrub: r.in.Scrubber}
	return context.WithValue(ctx, tapKey{}, r.tap)
}

// resumeTap goes on under key, the key the tap gave the run when it
// started (Suspension.TapKey), and returns the context of the run; a
// suspension without one is named to the tap as a new run.
func (r *run) resumeTap(ctx context.Context, key string) context.Context {
	s := tapFrom(ctx)
	if s == nil {
		return ctx
	}
	if key == "" {
		return r.startTap(ctx)
	}
	r.tap = &tapScope{tap: s.tap, key: key, scrub: r.in.Scrubber}
	return context.WithValue(ctx, tapKey{}, r.tap)
}

// tapKey is the run's key under its tap ("" without one).
func (r *run) tapKey() string {
	if r.tap == nil {
		return ""
	}
	return r.tap.key
}

// tapTurn tells the tap about a turn and returns the turn's context (it
// carries the step to the LLM calls) and client.
func (r *run) tapTurn(ctx context.Context, step int, conv []events.Message) (context.Context, *Client, error) {
	llm := r.llm()
	if r.tap == nil {
		return ctx, llm, nil
	}
	llm, err := r.tap.tap.Turn(ctx, r.tap.key, step, conv, llm)
	if err != nil {
		return ctx, nil, err
	}
	s := *r.tap
	s.step = step
	return context.WithValue(ctx, tapKey{}, &s), llm, nil
}

// memory runs a Recall or Keep through the tap, if there is one.
func (r *run) memory(ctx context.Context, phase MemoryPhase, run func(emit func(events.Event)) ([]events.Message, error)) ([]events.Message, error) {
	if r.tap == nil {
		return run(r.stream.Emit)
	}
	return r.tap.tap.Memory(ctx, r.tap.key, phase, r.stream.Emit, run)
}

// roundTrip sends an LLM request through the tap.
func (s *tapScope) roundTrip(ctx context.Context, url string, stream bool, body []byte, send func() (*http.Response, error)) (*http.Response, error) {
	return s.tap.RoundTrip(ctx, WireCall{Key: s.key, Step: s.step, URL: url, Stream: stream, Body: body, Scrub: s.scrub}, send)
}
