package mcpserve

import (
	"strconv"
	"sync"
	"sync/atomic"
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
//
// What a request is sent goes out in order, on a goroutine of the
// attachment (progressOut), so that Emit never waits for the client; the
// request detaches before it answers, and detaching waits until what was
// queued has been written: no notification follows the result (MCP:
// progress stops at completion). A request that was cancelled detaches
// dropping what is queued: nothing follows the cancellation either.
type progressSink struct {
	interval time.Duration
	now      func() time.Time

	mu       sync.Mutex
	out      *progressOut // the attached request; nil: none, or one that asked for no progress
	progress int
	// lastText is when streamed text or reasoning was last reported, and
	// lastKind which of the two, so a switch is reported at once.
	lastText time.Time
	lastKind string
	tools    map[string]string // tool call id -> tool name
	agents   map[string]string // sub-agent run id -> its name
}

// progressQueue bounds the notifications waiting for a slow client; more
// are dropped, which only costs the client progress steps.
const progressQueue = 64

// progressGap is the least time between a request's last progress and its
// response. A client may handle notifications asynchronously and responses
// at once: the TypeScript SDK, given both in one read, reports the progress
// as one for an unknown token (typescript-sdk#2580), and some clients then
// drop a stdio connection. Apart, they arrive in order.
const progressGap = 20 * time.Millisecond

// progressOut sends one request's notifications, in order, from a
// goroutine that ends when the request detaches.
type progressOut struct {
	peer    mcpPeer
	token   any
	queue   chan progressNote
	done    chan struct{}
	discard atomic.Bool
	last    time.Time // when the last notification was sent; read after done
}

type progressNote struct {
	n   int
	msg string
}

func newProgressOut(peer mcpPeer, token any) *progressOut {
	o := &progressOut{peer: peer, token: token, queue: make(chan progressNote, progressQueue), done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for note := range o.queue {
			if !o.discard.Load() {
				o.peer.progress(o.token, note.n, note.msg)
				o.last = time.Now()
			}
		}
	}()
	return o
}

// end stops the sender once it has written what is queued (flush) or
// dropped it, and waits for it; flushed, it returns progressGap after the
// last notification at the earliest.
func (o *progressOut) end(flush bool) {
	if !flush {
		o.discard.Store(true)
	}
	close(o.queue)
	<-o.done
	if wait := progressGap - time.Since(o.last); flush && !o.last.IsZero() && wait > 0 {
		time.Sleep(wait)
	}
}

func newProgressSink(interval time.Duration) *progressSink {
	return &progressSink{interval: interval, now: time.Now, tools: map[string]string{}, agents: map[string]string{}}
}

// Emit implements events.Sink. It never blocks: the notification is
// queued for the attached request, or dropped when its queue is full.
func (p *progressSink) Emit(e events.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Described even when no one listens, so that tool names and turns
	// are known when a request attaches.
	msg, ok := p.describe(e)
	if !ok || p.out == nil {
		return
	}
	p.progress++
	select {
	case p.out.queue <- progressNote{p.progress, msg}:
	default:
	}
}

// attach sends the notifications to a request's client, under its token
// (nil: the request asked for none). A request attached before is
// detached first, its notifications written.
func (p *progressSink) attach(peer mcpPeer, token any) {
	var out *progressOut
	if token != nil && peer != nil {
		out = newProgressOut(peer, token)
	}
	p.mu.Lock()
	prev := p.out
	p.out = out
	p.mu.Unlock()
	if prev != nil {
		prev.end(true)
	}
}

// detach ends the notifications of the attached request, and returns once
// none can follow: flush writes what is queued first (the request is about
// to answer), otherwise it is dropped (the request was cancelled).
func (p *progressSink) detach(flush bool) {
	p.mu.Lock()
	out := p.out
	p.out = nil
	p.mu.Unlock()
	if out != nil {
		out.end(flush)
	}
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
