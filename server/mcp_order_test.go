package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// orderLog records every message a transport wrote to its client, in the
// order the client reads them.
type orderLog struct {
	mu   sync.Mutex
	msgs []wireMsg
	// changed is signalled on every message.
	changed chan struct{}
}

// wireMsg is one JSON-RPC message as the client read it: a response (ID
// set) or a notification (Method set), with a progress notification's
// token.
type wireMsg struct {
	ID     string
	Method string
	Token  string
	Result map[string]any
	Error  map[string]any
}

func newOrderLog() *orderLog { return &orderLog{changed: make(chan struct{}, 1)} }

// read records the messages of r, one per line, until it ends.
func (l *orderLog) read(t *testing.T, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l.add(t, sc.Bytes())
	}
}

func (l *orderLog) add(t *testing.T, line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"params"`
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		t.Errorf("not JSON-RPC: %q", line)
		return
	}
	w := wireMsg{Method: m.Method, Result: m.Result, Error: m.Error}
	if len(m.ID) > 0 && m.Method == "" {
		w.ID = string(m.ID)
	}
	if len(m.Params.Token) > 0 {
		w.Token = string(m.Params.Token)
	}
	l.mu.Lock()
	l.msgs = append(l.msgs, w)
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// waitFor waits until ok holds of the messages so far.
func (l *orderLog) waitFor(t *testing.T, what string, ok func([]wireMsg) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		done := ok(l.msgs)
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-l.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (l *orderLog) snapshot() []wireMsg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wireMsg(nil), l.msgs...)
}

// hasResponse reports whether msgs hold the response to id.
func hasResponse(msgs []wireMsg, id string) bool {
	for _, m := range msgs {
		if m.ID == id {
			return true
		}
	}
	return false
}

// checkProgressOrder fails t for every progress notification of a call that
// the client read after the call's response: MCP forbids them ("progress
// notifications MUST stop after completion"); an SDK reports them as
// errors (unknown progress token). calls maps progress tokens to request
// ids.
func checkProgressOrder(t *testing.T, msgs []wireMsg, calls map[string]string) {
	t.Helper()
	answered := map[string]bool{}
	seen := map[string]int{}
	for _, m := range msgs {
		if m.ID != "" {
			answered[m.ID] = true
		}
		if m.Method == "notifications/progress" {
			id, ok := calls[m.Token]
			if !ok {
				t.Errorf("progress for a token no call sent: %s", m.Token)
				continue
			}
			seen[m.Token]++
			if answered[id] {
				t.Errorf("progress for token %s after the response to request %s", m.Token, id)
			}
		}
	}
	for token := range calls {
		if seen[token] == 0 {
			t.Errorf("no progress for token %s", token)
		}
	}
}

// stdioSession is a legacy (2025-11-25) client of ServeStdio writing raw
// lines and recording every line the server writes.
type stdioSession struct {
	t   *testing.T
	in  *io.PipeWriter
	log *orderLog
	mu  sync.Mutex
}

func newStdioSession(t *testing.T, s *Store) *stdioSession {
	serverIn, in := io.Pipe()
	outR, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &stdioSession{t: t, in: in, log: newOrderLog()}
	done := make(chan struct{})
	go func() {
		_ = s.ServeStdio(ctx, serverIn, serverOut, nil)
		serverOut.Close()
	}()
	go func() {
		defer close(done)
		c.log.read(t, outR)
	}()
	t.Cleanup(func() {
		in.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not end when its input closed")
		}
	})
	c.send(map[string]any{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "order-test", "version": "1"}}})
	c.log.waitFor(t, "the initialize response", func(m []wireMsg) bool { return hasResponse(m, `"init"`) })
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return c
}

func (c *stdioSession) send(msg map[string]any) {
	c.t.Helper()
	line, _ := json.Marshal(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// callWithProgress sends tools/call id for tool name with a progress token.
func (c *stdioSession) callWithProgress(id, token, name string, args map[string]any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"name": name, "arguments": args, "_meta": map[string]any{"progressToken": token}}})
}

// Over stdio, a call's progress notifications all reach the client before
// its response, also with calls in parallel. mcp-go writes notifications
// from a queue in a goroutine of its own and responses directly, so the
// last progress of a call (its node done) could be written after the
// response.
func TestMCPStdioProgressBeforeResult(t *testing.T) {
	e := newMCPEnv(t)
	c := newStdioSession(t, e.store)
	calls := map[string]string{}
	const rounds, parallel = 3, 4
	for r := range rounds {
		for i := range parallel {
			id, token := fmt.Sprintf("c%d-%d", r, i), fmt.Sprintf("p%d-%d", r, i)
			calls[`"`+token+`"`] = `"` + id + `"`
			c.callWithProgress(id, token, "reader", map[string]any{"message": "What do the notes say?"})
		}
		c.log.waitFor(t, "the round's responses", func(m []wireMsg) bool {
			for i := range parallel {
				if !hasResponse(m, fmt.Sprintf(`"c%d-%d"`, r, i)) {
					return false
				}
			}
			return true
		})
	}
	msgs := c.log.snapshot()
	for _, m := range msgs {
		if m.ID != "" && m.ID != `"init"` && (m.Error != nil || m.Result["isError"] == true) {
			t.Errorf("call %s failed: %v %v", m.ID, m.Error, m.Result)
		}
	}
	checkProgressOrder(t, msgs, calls)
}

// After notifications/cancelled, the server sends neither the cancelled
// call's response nor its progress (MCP: the receiver should not respond
// to a cancelled request, and progress stops with it).
func TestMCPStdioNothingAfterCancel(t *testing.T) {
	e := newMCPEnv(t)
	c := newStdioSession(t, e.store)
	c.callWithProgress("slow-1", "ps", "slow", map[string]any{"message": "take your time"})
	await(t, e.hang.arrived, "the slow agent's model request")
	c.log.waitFor(t, "the slow call's first progress", func(m []wireMsg) bool {
		for _, x := range m {
			if x.Token == `"ps"` {
				return true
			}
		}
		return false
	})
	cancelledAt := len(c.log.snapshot())
	c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": "slow-1", "reason": "the test cancels"}})
	await(t, e.hang.gone, "the cancelled run to let go of its model")
	// The run has ended; whatever it would answer is written by now. A
	// later request's response marks the end of what to look at.
	c.send(map[string]any{"jsonrpc": "2.0", "id": "after", "method": "tools/call", "params": map[string]any{
		"name": "helper", "arguments": map[string]any{"message": "still there?"}}})
	c.log.waitFor(t, "the next call's response", func(m []wireMsg) bool { return hasResponse(m, `"after"`) })
	time.Sleep(200 * time.Millisecond)
	for _, m := range c.log.snapshot()[cancelledAt:] {
		if m.ID == `"slow-1"` {
			t.Errorf("the cancelled call was answered: %v %v", m.Result, m.Error)
		}
		if m.Token == `"ps"` {
			t.Errorf("progress of the cancelled call after its cancellation")
		}
	}
}

// httpSession is a legacy (2025-11-25) client of /mcp: one session, each
// request a POST whose stream it records on its own.
type httpSession struct {
	t   *testing.T
	url string
	sid string
}

func newHTTPSession(t *testing.T, url string) *httpSession {
	c := &httpSession{t: t, url: url}
	resp := c.post(map[string]any{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "order-test", "version": "1"}}})
	c.sid = resp.Header.Get("Mcp-Session-Id")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.sid == "" {
		t.Fatal("no session id")
	}
	resp = c.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	resp.Body.Close()
	return c
}

func (c *httpSession) post(msg map[string]any) *http.Response {
	c.t.Helper()
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// stream posts msg and records the messages of its response.
func (c *httpSession) stream(msg map[string]any) *orderLog {
	l, _ := c.streamUntilEnd(msg)
	return l
}

// streamUntilEnd is stream, with a channel closed when the response ends.
func (c *httpSession) streamUntilEnd(msg map[string]any) (*orderLog, <-chan struct{}) {
	resp := c.post(msg)
	l := newOrderLog()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			b, _ := io.ReadAll(resp.Body)
			if len(bytes.TrimSpace(b)) > 0 {
				l.add(c.t, b)
			}
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				l.add(c.t, []byte(data))
			}
		}
	}()
	return l, ended
}

// Over /mcp, parallel calls of one session each get their own progress,
// before their response, on their own stream. mcp-go v1.2.1 queues a
// session's notifications on one channel that every open request of the
// session drains, so one call's progress could leave on another call's
// stream, after its own response.
func TestMCPHTTPProgressOnItsOwnStream(t *testing.T) {
	e := newMCPEnv(t)
	base := serveLoopback(t, Handler(Options{Store: e.store}))
	c := newHTTPSession(t, base+"/mcp")
	const rounds, parallel = 3, 4
	for r := range rounds {
		logs := make([]*orderLog, parallel)
		for i := range parallel {
			id, token := fmt.Sprintf("c%d-%d", r, i), fmt.Sprintf("p%d-%d", r, i)
			logs[i] = c.stream(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
				"name": "reader", "arguments": map[string]any{"message": "What do the notes say?"}, "_meta": map[string]any{"progressToken": token}}})
		}
		for i, l := range logs {
			id := fmt.Sprintf(`"c%d-%d"`, r, i)
			l.waitFor(t, "the response to "+id, func(m []wireMsg) bool { return hasResponse(m, id) })
			checkProgressOrder(t, l.snapshot(), map[string]string{fmt.Sprintf(`"p%d-%d"`, r, i): id})
		}
	}
}

// Over /mcp, a call its client cancelled (notifications/cancelled, on
// another POST of the session) gets neither its response nor more progress
// on its stream, which then ends.
func TestMCPHTTPNothingAfterCancel(t *testing.T) {
	e := newMCPEnv(t)
	base := serveLoopback(t, Handler(Options{Store: e.store}))
	c := newHTTPSession(t, base+"/mcp")
	l, ended := c.streamUntilEnd(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name": "slow", "arguments": map[string]any{"message": "take your time"}, "_meta": map[string]any{"progressToken": "ps"}}})
	await(t, e.hang.arrived, "the slow agent's model request")
	l.waitFor(t, "the slow call's first progress", func(m []wireMsg) bool { return len(m) > 0 })
	cancelledAt := len(l.snapshot())
	resp := c.post(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 7, "reason": "the test cancels"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the cancellation: HTTP %d", resp.StatusCode)
	}
	await(t, e.hang.gone, "the cancelled run to let go of its model")
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's stream did not end")
	}
	for _, m := range l.snapshot()[cancelledAt:] {
		t.Errorf("sent after the cancellation: %+v", m)
	}
	// The session goes on.
	l = c.stream(map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": map[string]any{
		"name": "helper", "arguments": map[string]any{"message": "still there?"}}})
	l.waitFor(t, "the next call's response", func(m []wireMsg) bool { return hasResponse(m, "8") })
}
