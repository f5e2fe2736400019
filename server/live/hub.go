// Package live is the WebSocket hub of GET /api/v1/ws: clients subscribe
// to chain ids and receive, for those chains, the RuleGo node trace and the
// AG-UI events of every run, plus a note whenever any chain is deployed or
// deleted. Publishing never waits for a client: a client whose queue is
// full is disconnected, so a slow browser can never slow a run.
package live

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

// queueSize is how many messages a client may lag behind before it is
// dropped. A streamed answer emits an event per token, so it is generous.
const queueSize = 1024

// Hub fans messages out to subscribed clients. It is safe for concurrent use.
type Hub struct {
	mu      sync.RWMutex
	clients map[*client]struct{}
	// subs counts the clients subscribed to each chain, so that runs of a
	// chain nobody watches cost one map read.
	subs  map[string]int
	total atomic.Int64 // clients connected
	// dropped counts the clients disconnected for being too slow.
	dropped atomic.Int64
}

// NewHub returns a hub with no clients.
func NewHub() *Hub {
	return &Hub{clients: map[*client]struct{}{}, subs: map[string]int{}}
}

// Watching reports whether any client is subscribed to chainID.
func (h *Hub) Watching(chainID string) bool {
	if h == nil || h.total.Load() == 0 {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.subs[chainID] > 0
}

// Clients returns the number of connected clients.
func (h *Hub) Clients() int { return int(h.total.Load()) }

// Dropped returns how many clients were disconnected for reading too slowly.
func (h *Hub) Dropped() int64 { return h.dropped.Load() }

// NodeTrace is one step of RuleGo's node trace.
type NodeTrace struct {
	ChainID string `json:"chainId"`
	RunID   string `json:"runId,omitempty"`
	MsgID   string `json:"msgId,omitempty"`
	NodeID  string `json:"nodeId"`
	// Flow is IN (the node received a message), OUT (it told its result on
	// Relation) or DONE (it completed; DurationMs says how long it took).
	Flow       string `json:"flow"`
	Relation   string `json:"relation,omitempty"`
	Error      string `json:"error,omitempty"`
	Ts         int64  `json:"ts"`
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// Node publishes a node trace step to the clients watching its chain.
func (h *Hub) Node(t NodeTrace) {
	if !h.Watching(t.ChainID) {
		return
	}
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		NodeTrace
	}{"node", t})
	if err == nil {
		h.publish(t.ChainID, t.RunID, b)
	}
}

// Event publishes a run's AG-UI event to the clients watching chainID.
func (h *Hub) Event(chainID, runID string, e *events.Event) {
	if !h.Watching(chainID) {
		return
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"type":"event","chainId":`...)
	b = events.AppendString(b, chainID)
	b = append(b, `,"runId":`...)
	b = events.AppendString(b, runID)
	b = append(b, `,"event":`...)
	b = e.AppendJSON(b)
	b = append(b, '}')
	h.publish(chainID, runID, b)
}

// Chain tells every client that a chain was deployed or deleted.
func (h *Hub) Chain(chainID, change string) {
	if h == nil || h.total.Load() == 0 {
		return
	}
	b, err := json.Marshal(map[string]string{"type": "chain", "chainId": chainID, "change": change})
	if err == nil {
		h.fanout(b, func(*client) bool { return true })
	}
}

func (h *Hub) publish(chainID, runID string, b []byte) {
	h.fanout(b, func(c *client) bool { return c.watchesRun(chainID, runID) })
}

// fanout queues b for every client want selects.
func (h *Hub) fanout(b []byte, want func(*client) bool) {
	h.mu.RLock()
	var targets []*client
	for c := range h.clients {
		if want(c) {
			targets = append(targets, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range targets {
		h.send(c, b)
	}
}

// send queues b for c, dropping c if its queue is full.
func (h *Hub) send(c *client, b []byte) {
	if !c.offer(b) {
		h.dropped.Add(1)
		metrics.StreamClientsDropped.WithLabelValues("websocket", "queue_full").Inc()
		c.drop()
	}
}

// Close disconnects every client (close code 1001, going away).
func (h *Hub) Close() {
	h.mu.RLock()
	all := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		all = append(all, c)
	}
	h.mu.RUnlock()
	for _, c := range all {
		c.closeWith(1001, "the server is shutting down")
	}
}

func (h *Hub) add(c *client) {
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	metrics.ActiveStreams.WithLabelValues("websocket").Inc()
	h.total.Add(1)
}

func (h *Hub) remove(c *client) {
	h.mu.Lock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		metrics.ActiveStreams.WithLabelValues("websocket").Dec()
		for id := range c.chains {
			h.unsubLocked(id)
		}
		h.total.Add(-1)
	}
	h.mu.Unlock()
}

// subscribe changes c's subscriptions and returns the full set.
func (h *Hub) subscribe(c *client, ids []string, on bool) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		_, has := c.chains[id]
		switch {
		case on && !has:
			c.chains[id] = struct{}{}
			h.subs[id]++
		case !on && has:
			delete(c.chains, id)
			h.unsubLocked(id)
		}
	}
	out := make([]string, 0, len(c.chains))
	for id := range c.chains {
		out = append(out, id)
	}
	return out
}

func (h *Hub) unsubLocked(id string) {
	if h.subs[id]--; h.subs[id] <= 0 {
		delete(h.subs, id)
	}
}
