package mcpserve

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
)

// MCP lets a client cancel a request it sent (notifications/cancelled);
// the server then "SHOULD NOT send a response for the cancelled request",
// and its progress stops. mcp-go v1.2.1 cancels the handler's context but
// still writes the handler's result. The transports therefore watch what
// their clients send: openCalls are the requests a transport has not
// answered yet, each with a flag its client's cancellation sets; the
// transport's writer drops the response of a flagged request. (A
// cancellation that crosses the response on the wire is harmless: the
// client ignores the late response.)
type openCalls struct {
	mu   sync.Mutex
	open map[string]*atomic.Bool
}

func newOpenCalls() *openCalls { return &openCalls{open: map[string]*atomic.Bool{}} }

// add records request key as open and returns its cancellation flag.
func (o *openCalls) add(key string) *atomic.Bool {
	flag := &atomic.Bool{}
	o.mu.Lock()
	o.open[key] = flag
	o.mu.Unlock()
	return flag
}

// done forgets request key, if flag is still its entry (a client may reuse
// an id once answered), and reports whether it was cancelled.
func (o *openCalls) done(key string, flag *atomic.Bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur, ok := o.open[key]; ok && (flag == nil || cur == flag) {
		delete(o.open, key)
		return cur.Load()
	}
	return false
}

// cancel flags request key, if it is open.
func (o *openCalls) cancel(key string) {
	o.mu.Lock()
	if flag, ok := o.open[key]; ok {
		flag.Store(true)
	}
	o.mu.Unlock()
}

// jsonrpcID is a JSON-RPC id in one spelling (the client's 7 and 7.0, or its
// "a" written with escapes, are the same id), "" for none.
func jsonrpcID(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	switch v.(type) {
	case string, float64:
	default:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// rpcHead is what the cancellation bookkeeping reads of a message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// isCancel reports whether h is notifications/cancelled, and for which
// request.
func (h rpcHead) isCancel() (string, bool) {
	if h.Method != "notifications/cancelled" {
		return "", false
	}
	id := jsonrpcID(h.Params.RequestID)
	return id, id != ""
}

// responseID is the id of a JSON-RPC response message, "" when msg is not
// one.
func responseID(msg []byte) string {
	var h rpcHead
	if json.Unmarshal(msg, &h) != nil || h.Method != "" {
		return ""
	}
	return jsonrpcID(h.ID)
}

// maxWatchedLine bounds the input line the stdio cancellation watch reads
// into memory; a longer request is served, but not tracked (a cancel of
// it is then answered as before).
const maxWatchedLine = 16 << 20

// cancelWatch passes a stdio client's input through to mcp-go, recording
// on the way the requests it opens and the ones it cancels.
type cancelWatch struct {
	r     io.Reader
	calls *openCalls
	line  []byte
	long  bool // the current line is over maxWatchedLine
}

func (c *cancelWatch) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	data := p[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		chunk := data
		if i >= 0 {
			chunk = data[:i]
		}
		if !c.long && len(c.line)+len(chunk) <= maxWatchedLine {
			c.line = append(c.line, chunk...)
		} else {
			c.long, c.line = true, c.line[:0]
		}
		if i < 0 {
			break
		}
		if !c.long {
			c.see(c.line)
		}
		c.line, c.long = c.line[:0], false
		data = data[i+1:]
	}
	return n, err
}

// see records one message of the client's.
func (c *cancelWatch) see(line []byte) {
	if !bytes.Contains(line, []byte(`"method"`)) {
		return // a response to the server's request
	}
	var h rpcHead
	if json.Unmarshal(line, &h) != nil {
		return
	}
	if id, ok := h.isCancel(); ok {
		c.calls.cancel(id)
		return
	}
	if id := jsonrpcID(h.ID); id != "" && h.Method != "" {
		c.calls.add(id)
	}
}
