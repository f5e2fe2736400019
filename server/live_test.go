package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
)

type liveMsg struct {
	Type       string          `json:"type"`
	Chains     []string        `json:"chains"`
	ChainID    string          `json:"chainId"`
	RunID      string          `json:"runId"`
	NodeID     string          `json:"nodeId"`
	Flow       string          `json:"flow"`
	Relation   string          `json:"relation"`
	DurationMs *int64          `json:"durationMs"`
	Change     string          `json:"change"`
	Event      json.RawMessage `json:"event"`
	Message    string          `json:"message"`
}

func dialLive(t *testing.T, e *apiEnv, query string, hdr http.Header) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(e.base, "http") + "/api/v1/ws" + query
	c, resp, err := websocket.DefaultDialer.Dial(url, hdr)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (%d)", url, err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readLive(t *testing.T, c *websocket.Conn, until func(liveMsg) bool) []liveMsg {
	t.Helper()
	var got []liveMsg
	_ = c.SetReadDeadline(time.Now().Add(15 * time.Second))
	for {
		var m liveMsg
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("reading the live stream after %d messages: %v", len(got), err)
		}
		got = append(got, m)
		if until(m) {
			return got
		}
	}
}

// A WebSocket client subscribed to a chain sees its runs' node trace and
// AG-UI events, and the chains a run calls as tools when it subscribes to
// them too; every client hears of deployments.
func TestLiveTrace(t *testing.T) {
	e := newAPIEnv(t, Options{Token: "live-token"})
	c := dialLive(t, e, "?token=live-token", nil)
	if err := c.WriteJSON(map[string]any{"type": "subscribe", "chains": []string{"tools", "lookup"}}); err != nil {
		t.Fatal(err)
	}
	if m := readLive(t, c, func(m liveMsg) bool { return m.Type == "subscribed" }); len(m[len(m)-1].Chains) != 2 {
		t.Fatalf("subscribed: %+v", m)
	}

	code, body, hdr := e.do("POST", "/api/v1/chains/tools/run", map[string]any{"input": "lookup please"})
	if code != 200 {
		t.Fatalf("run: %d %s", code, body)
	}
	runID := hdr.Get("X-Run-Id")
	msgs := readLive(t, c, func(m liveMsg) bool {
		return m.Type == "event" && m.RunID == runID && strings.Contains(string(m.Event), `"RUN_FINISHED"`)
	})
	// The node trace is asynchronous (RuleGo's debug callback): allow a
	// moment for the last of it.
	deadline := time.Now().Add(3 * time.Second)
	seen := func(chain, node, flow string) bool {
		for _, m := range msgs {
			if m.Type == "node" && m.ChainID == chain && m.NodeID == node && m.Flow == flow {
				return true
			}
		}
		return false
	}
	for !(seen("tools", "agent", "IN") && seen("tools", "agent", "OUT") && seen("tools", "agent", "DONE") && seen("lookup", "js", "IN") && seen("lookup", "js", "OUT")) {
		if time.Now().After(deadline) {
			t.Fatalf("node trace incomplete: %+v", msgs)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		var m liveMsg
		if err := c.ReadJSON(&m); err == nil {
			msgs = append(msgs, m)
		}
	}
	var started, toolResult bool
	for _, m := range msgs {
		if m.Type == "event" && m.ChainID == "tools" && m.RunID == runID {
			started = started || strings.Contains(string(m.Event), `"RUN_STARTED"`)
			toolResult = toolResult || strings.Contains(string(m.Event), `"TOOL_CALL_RESULT"`)
		}
		if m.Type == "node" && m.Flow == "DONE" && m.NodeID == "agent" && (m.DurationMs == nil || m.Relation != "Success" || m.RunID != runID) {
			t.Errorf("DONE without duration, relation or run: %+v", m)
		}
	}
	if !started || !toolResult {
		t.Errorf("events missing: started %v, tool result %v", started, toolResult)
	}

	// A chain deployed: every client hears of it.
	e.do("PUT", "/api/v1/chains/newone", jsDSL("", "New", nil, "return {msg: msg, metadata: metadata, msgType: msgType};"))
	readLive(t, c, func(m liveMsg) bool { return m.Type == "chain" && m.ChainID == "newone" && m.Change == "deployed" })

	// Bad messages get an error, and the connection stays.
	_ = c.WriteMessage(websocket.TextMessage, []byte(`{"type":"dance"}`))
	readLive(t, c, func(m liveMsg) bool { return m.Type == "error" && strings.Contains(m.Message, "unknown message type") })

	// Without the token, no connection.
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.base, "http")+"/api/v1/ws", nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("dial without token: %v", err)
	}
	// A page from another origin may not connect.
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.base, "http")+"/api/v1/ws?token=live-token",
		http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("dial from another origin: %v", err)
	}
}

// A client that does not read is dropped; the run it watches never waits.
func TestLiveSlowClientIsDropped(t *testing.T) {
	wsDrops := metrics.StreamClientsDropped.WithLabelValues("websocket", "queue_full")
	before := testutil.ToFloat64(wsDrops)
	e := newAPIEnv(t, Options{})
	c := dialLive(t, e, "", nil)
	if err := c.WriteJSON(map[string]any{"type": "subscribe", "chains": []string{"slow"}}); err != nil {
		t.Fatal(err)
	}
	readLive(t, c, func(m liveMsg) bool { return m.Type == "subscribed" })
	// Fill the client's queue without reading: many runs' events.
	for range 20 {
		e.store.live.Event("slow", "r", &bigEvent)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.store.live.Dropped() == 0 {
		for range 200 {
			e.store.live.Event("slow", "r", &bigEvent)
		}
		if time.Now().After(deadline) {
			t.Fatal("a client that never reads was not dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// It is counted, and /metrics shows it.
	if got := testutil.ToFloat64(wsDrops) - before; got != float64(e.store.live.Dropped()) {
		t.Fatalf("ruleagent_stream_clients_dropped_total{kind=websocket} went up by %v, for %d drops", got, e.store.live.Dropped())
	}
	if code, body, _ := e.do("GET", "/metrics", nil); code != 200 || !strings.Contains(string(body), `ruleagent_stream_clients_dropped_total{kind="websocket",reason="queue_full"}`) {
		t.Fatalf("/metrics: %d", code)
	}
	// The run itself completes normally.
	if code, body, _ := e.do("POST", "/api/v1/chains/chat/run", map[string]any{"input": "still fine?"}); code != 200 || !strings.Contains(string(body), "still fine?") {
		t.Fatalf("run: %d %s", code, body)
	}
}

var bigEvent = events.Event{Type: events.TextMessageContent, MessageID: "m", Delta: strings.Repeat("x", 16<<10)}
