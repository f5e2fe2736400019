package server

import (
	"strconv"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/events"
)

// progressSink turns a chain run's events into notifications/progress for
// the request waiting on the run, when it asked for them with a
// progressToken. Each notification counts up by one (the total is unknown)
// and says in words what the chain is doing: "started", "calling read",
// "read returned", "Check the order id done", "writing the answer".
// Tool calls and the chain's nodes are always reported; streamed text and
// reasoning at most once per interval, so a fast stream does not flood the
// client.
//
// A run that waits for a 2026-07-28 client's input outlives its request:
// the sink is attached to each request that waits on the run in turn, and
// sends nothing in between.
type progressSink struct {
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex
	peer     mcpPeer
	token    any // nil: no request, or one that asked for no progress
	progress int
	// lastText is when streamed text or reasoning was last reported, and
	// lastKind which of the two, so a switch is reported at once.
	lastText time.Time
	lastKind string
	tools    map[string]string // tool call id -> tool name
	agents   map[string]string // sub-agent run id -> its name
}

func newProgressSink(interval time.Duration) *progressSink {
	return &progressSink{interval: interval, now: time.Now, tools: map[string]string{}, agents: map[string]string{}}
}

// Emit implements events.Sink. Sending never blocks: the peer queues the
// notification, or drops it when the client's queue is full, which only
// costs the client one progress step.
func (p *progressSink) Emit(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Described even when no one listens, so that tool names and turns
	// are known when a request attaches.
	msg, ok := p.describe(e)
	if !ok || p.token == nil {
		return
	}
	p.progress++
	p.peer.progress(p.token, p.progress, msg)
}

// attach sends the notifications to a request's client, under its token
// (nil: the request asked for none).
func (p *progressSink) attach(peer mcpPeer, token any) {
	p.mu.Lock()
	p.peer, p.token = peer, token
	p.mu.Unlock()
}

// detach ends the notifications of the attached request: none may follow
// its result.
func (p *progressSink) detach() {
	p.mu.Lock()
	p.peer, p.token = nil, nil
	p.mu.Unlock()
}

// describe says what event e shows the run doing, or false when e is not
// worth a notification. The caller holds p.mu.
func (p *progressSink) describe(e events.Event) (string, bool) {
	var msg string
	switch e.Type {
	case events.RunStarted:
		msg = "started"
	case events.ToolCallStart:
		p.tools[e.ToolCallID] = e.ToolCallName
		p.lastKind = ""
		msg = "calling " + e.ToolCallName
	case events.ToolCallResult:
		name, ok := p.tools[e.ToolCallID]
		if !ok {
			return "", false
		}
		delete(p.tools, e.ToolCallID)
		msg = name + " returned"
		if e.Meta.IsError {
			msg = name + " failed"
		}
	case events.TextMessageContent:
		if !p.streamed("text") {
			return "", false
		}
		msg = "writing the answer"
	case events.ReasoningMessageContent:
		if !p.streamed("reasoning") {
			return "", false
		}
		msg = "thinking"
	case events.StepFinished:
		// The run's own nodes (those of a rulechain tool it calls carry
		// their tool call, reported as the call).
		if e.Meta.NodeID == "" || e.Meta.ToolCallID != "" || e.SubagentRunID != "" {
			return "", false
		}
		if e.Meta.IsError {
			return e.StepName + " failed", true
		}
		return e.StepName + " done", true
	case events.StepStarted:
		// Only the agent's own LLM turns; rule-chain node steps name a node.
		if e.Meta.Step < 2 || e.Meta.NodeID != "" {
			return "", false
		}
		p.lastKind = ""
		msg = "asking the model again (turn " + strconv.Itoa(e.Meta.Step) + ")"
	case events.SubagentStarted:
		p.agents[e.SubagentRunID] = e.Name
		return "starting sub-agent " + e.Name, true
	case events.SubagentFinished, events.SubagentError:
		name := p.agents[e.SubagentRunID]
		delete(p.agents, e.SubagentRunID)
		if e.Type == events.SubagentError {
			return "sub-agent " + name + " failed", true
		}
		return "sub-agent " + name + " finished", true
	case events.Custom:
		if e.Name != "ruleagent.llm_retry" && e.Name != "ruleagent.llm_failover" {
			return "", false
		}
		msg = "retrying the model"
	default:
		return "", false
	}
	if name, ok := p.agents[e.SubagentRunID]; ok && e.SubagentRunID != "" {
		msg = name + ": " + msg
	}
	return msg, true
}

// streamed reports whether a chunk of kind (text or reasoning) is due a
// notification: the first of a stretch always, then one per interval.
func (p *progressSink) streamed(kind string) bool {
	now := p.now()
	if kind == p.lastKind && now.Sub(p.lastText) < p.interval {
		return false
	}
	p.lastKind, p.lastText = kind, now
	return true
}
