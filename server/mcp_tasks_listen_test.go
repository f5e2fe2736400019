package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// listenStream is an open subscriptions/listen stream: its messages, in
// order, closed when the stream ends.
type listenStream struct {
	status int
	msgs   chan map[string]any
}

// openListen posts subscriptions/listen (request id 7) with filter as a
// 2026-07-28 client with caps.
func openListen(t *testing.T, url string, filter, caps map[string]any) *listenStream {
	t.Helper()
	params := map[string]any{"notifications": filter, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
	}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &listenStream{status: resp.StatusCode, msgs: make(chan map[string]any, 64)}
	go func() {
		defer resp.Body.Close()
		defer close(s.msgs)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") && !strings.HasPrefix(line, "{") {
				continue
			}
			var m map[string]any
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m) == nil {
				s.msgs <- m
			}
		}
	}()
	t.Cleanup(func() {
		resp.Body.Close()
		for range s.msgs {
		}
	})
	return s
}

// next is the stream's next message (nil when it ended).
func (s *listenStream) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-s.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message on the listen stream within 10 s")
		return nil
	}
}

// until reads notifications/tasks until one satisfies cond, and returns it.
func (s *listenStream) until(t *testing.T, cond func(params map[string]any) bool) map[string]any {
	t.Helper()
	for {
		m := s.next(t)
		if m == nil {
			t.Fatal("the listen stream ended")
		}
		if m["method"] != "notifications/tasks" {
			t.Fatalf("on the listen stream: %v", m)
		}
		params := m["params"].(map[string]any)
		if sub := params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]; sub != float64(7) {
			t.Fatalf("a notification without the stream's subscriptionId: %v", m)
		}
		if cond(params) {
			return params
		}
	}
}

// TestMCPTaskListenAcrossReplicas: a client listening on one replica for
// a task running on another gets each of its status changes as
// notifications/tasks (the DetailedTask tasks/get would answer) as the
// store tells of them, the
// stream ends with its result once the task has ended; a task it may not
// see is left out of the acknowledgement, a client without the extension
// gets -32021, and the server's shutdown ends an open stream with its
// result.
func TestMCPTaskListenAcrossReplicas(t *testing.T) {
	t.Run("memory", func(t *testing.T) { listenAcrossReplicas(t, newTaskFleet(t, 2, tasks.NewMemory()), true) })
	// A store that does not tell of its changes: the streams read it
	// every second.
	t.Run("polled", func(t *testing.T) {
		listenAcrossReplicas(t, newTaskFleet(t, 2, struct{ tasks.Store }{tasks.NewMemory()}), false)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		store := func() tasks.Store {
			opts, _ := redis.ParseURL(srv.URL)
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			return tasks.NewRedis(rdb, "ruleagent:")
		}
		listenAcrossReplicas(t, []taskReplica{newTaskFleet(t, 1, store())[0], newTaskFleet(t, 1, store())[0]}, true)
	})
}

func listenAcrossReplicas(t *testing.T, fleet []taskReplica, told bool) {
	a, b := fleet[0], fleet[1]
	created, perr := modernCall(t, a.url, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "x"}}, withTasks)
	if perr != nil || created["resultType"] != "task" {
		t.Fatalf("tools/call: %v %v", created, perr)
	}
	id := created["taskId"].(string)

	if told {
		// b's stream does not read the store on its own: what a changes
		// reaches it through the store's changes (Redis pub/sub; in
		// process for memory).
		b.store.mcp.SetTaskListenPoll(time.Hour)
	}
	s := openListen(t, b.url, map[string]any{"taskIds": []string{id, "task-never-was"}}, withTasks)
	ack := s.next(t)
	if ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message: %v", ack)
	}
	params := ack["params"].(map[string]any)
	if ids, _ := params["notifications"].(map[string]any)["taskIds"].([]any); len(ids) != 1 || ids[0] != id {
		t.Fatalf("acknowledged: %v", ack)
	}
	if sub := params["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"]; sub != float64(7) {
		t.Fatalf("the acknowledgement's subscriptionId: %v", ack)
	}
	asked := s.until(t, func(p map[string]any) bool { return p["status"] == "input_required" })
	if _, ok := asked["inputRequests"].(map[string]any)["confirm"]; !ok || asked["taskId"] != id || asked["resultType"] != nil {
		t.Fatalf("input_required notification: %v", asked)
	}
	if ack, perr := modernCall(t, a.url, "tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, withTasks); perr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update on a: %v %v", ack, perr)
	}
	done := s.until(t, func(p map[string]any) bool { return p["status"] == "completed" })
	if text := done["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "deleted" {
		t.Fatalf("completed notification: %v", done)
	}
	end := s.next(t)
	if end["id"] != float64(7) || end["result"].(map[string]any)["resultType"] != "complete" ||
		end["result"].(map[string]any)["_meta"].(map[string]any)["io.modelcontextprotocol/subscriptionId"] != float64(7) {
		t.Fatalf("the stream's end: %v", end)
	}
	if more := s.next(t); more != nil {
		t.Fatalf("after the result: %v", more)
	}

	// Without the extension: -32021.
	refused := openListen(t, b.url, map[string]any{"taskIds": []string{id}}, map[string]any{})
	if e := refused.next(t); refused.status != http.StatusBadRequest || e["error"].(map[string]any)["code"] != float64(mcpserve.CodeMissingCapability) {
		t.Fatalf("listen without the extension: %d %v", refused.status, e)
	}

	// Shutdown ends an open stream with its result.
	created, _ = modernCall(t, a.url, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{}}, withTasks)
	open := openListen(t, a.url, map[string]any{"taskIds": []string{created["taskId"].(string)}}, withTasks)
	open.next(t) // the acknowledgement
	open.until(t, func(p map[string]any) bool { return p["status"] == "input_required" })
	a.store.CloseMCPSessions()
	if end := open.next(t); end["id"] != float64(7) || end["result"] == nil {
		t.Fatalf("the stream's end at shutdown: %v", end)
	}
}
