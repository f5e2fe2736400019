package live

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Timing of the connection: a ping every pingEvery; a client that answers
// nothing (no pong, no message) within pongWait is gone.
const (
	pingEvery  = 30 * time.Second
	pongWait   = 75 * time.Second
	writeWait  = 10 * time.Second
	maxMessage = 64 << 10
)

// Close codes: 1008 for a client that read too slowly (policy), 1001 when
// the server goes away.
const closeTooSlow = websocket.ClosePolicyViolation

type client struct {
	conn  *websocket.Conn
	queue chan []byte
	// runs, when set, says which runs the client may watch (RunFilter).
	runs   RunFilter
	mu     sync.Mutex
	chains map[string]struct{}

	dropOnce sync.Once
	gone     chan struct{}
}

// RunFilter says whether a client may watch the run with runID: a caller
// who may see only its own runs gets one (nil: every run).
type RunFilter func(runID string) bool

// watchesRun reports whether c is subscribed to chainID and may see runID.
func (c *client) watchesRun(chainID, runID string) bool {
	return c.watches(chainID) && (c.runs == nil || c.runs(runID))
}

func (c *client) watches(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.chains[id]
	return ok
}

// offer queues b without waiting; false when the queue is full.
func (c *client) offer(b []byte) bool {
	select {
	case <-c.gone:
		return true
	default:
	}
	select {
	case c.queue <- b:
		return true
	default:
		return false
	}
}

// drop ends the connection of a client that cannot keep up.
func (c *client) drop() {
	c.closeWith(closeTooSlow, "too slow: events were dropped")
}

// closeWith ends the connection with a close code, off the caller's
// goroutine: the caller may be a run emitting an event.
func (c *client) closeWith(code int, text string) {
	c.dropOnce.Do(func() {
		close(c.gone)
		go func() {
			_ = c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
			_ = c.conn.Close()
		}()
	})
}

// Subprotocol is the WebSocket subprotocol the server answers. A browser
// client offers it together with "bearer.<base64url(token)>" (no padding)
// when the server needs a token, since browsers cannot set headers on a
// WebSocket and a token in the URL ends up in logs and histories.
const Subprotocol = "ruleagent"

// bearerPrefix starts the subprotocol that carries the token.
const bearerPrefix = "bearer."

// BearerSubprotocol returns the token a client offered as the subprotocol
// "bearer.<base64url(token)>", and whether it offered one (a malformed one
// is offered, with no token).
func BearerSubprotocol(r *http.Request) ([]byte, bool) {
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if enc, ok := strings.CutPrefix(strings.TrimSpace(p), bearerPrefix); ok {
				tok, err := base64.RawURLEncoding.DecodeString(enc)
				if err != nil {
					return nil, true
				}
				return tok, true
			}
		}
	}
	return nil, false
}

// Handler serves GET /api/v1/ws. checkOrigin decides whether a browser
// page may connect (the server's guard has decided before; this holds
// when the handler is mounted alone); nil admits same-origin pages and
// non-browser clients only.
func (h *Hub) Handler(checkOrigin func(r *http.Request) bool) http.Handler {
	return h.HandlerFiltered(checkOrigin, nil)
}

// HandlerFiltered is Handler whose clients see only the runs filterOf
// their handshake request admits (a nil filterOf, or a nil RunFilter:
// every run); chain notes go to every client.
func (h *Hub) HandlerFiltered(checkOrigin func(r *http.Request) bool, filterOf func(r *http.Request) RunFilter) http.Handler {
	if checkOrigin == nil {
		checkOrigin = sameOriginOrNone
	}
	up := websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 16 << 10,
		CheckOrigin:     checkOrigin,
		Subprotocols:    []string{Subprotocol},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered the client
		}
		c := &client{conn: conn, queue: make(chan []byte, queueSize), chains: map[string]struct{}{}, gone: make(chan struct{})}
		if filterOf != nil {
			c.runs = filterOf(r)
		}
		h.add(c)
		defer h.remove(c)
		go c.writeLoop()
		c.readLoop(h)
		c.dropOnce.Do(func() { close(c.gone) })
		_ = conn.Close()
	})
}

// sameOriginOrNone admits a request without an Origin, or whose Origin
// names the request's host.
func sameOriginOrNone(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// request is a message from the client.
type request struct {
	Type   string   `json:"type"`
	Chains []string `json:"chains"`
}

func (c *client) readLoop(h *Hub) {
	c.conn.SetReadLimit(maxMessage)
	_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
	c.conn.SetPongHandler(func(string) error { return c.conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		_ = c.conn.SetReadDeadline(time.Now().Add(pongWait))
		var req request
		if err := json.Unmarshal(data, &req); err != nil {
			c.reply(map[string]any{"type": "error", "message": "not a JSON message: " + err.Error()})
			continue
		}
		switch req.Type {
		case "subscribe", "unsubscribe":
			set := h.subscribe(c, req.Chains, req.Type == "subscribe")
			slices.Sort(set)
			c.reply(map[string]any{"type": "subscribed", "chains": set})
		default:
			c.reply(map[string]any{"type": "error", "message": `unknown message type "` + req.Type + `": send {"type":"subscribe","chains":[...]} or {"type":"unsubscribe","chains":[...]}`})
		}
	}
}

func (c *client) reply(v any) {
	b, err := json.Marshal(v)
	if err == nil && !c.offer(b) {
		c.drop()
	}
}

func (c *client) writeLoop() {
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-c.gone:
			return
		case b := <-c.queue:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
				c.drop()
				return
			}
		case <-ping.C:
			if err := c.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.drop()
				return
			}
		}
	}
}
