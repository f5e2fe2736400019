package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// taskReplica is one server of a fleet sharing a task store.
type taskReplica struct {
	store *Store
	url   string
}

// newTaskFleet starts n servers with the tasks conformance fixtures
// (confirm_delete, slow_compute, ...) on one task store, as replicas on
// one Redis are; the store's own fleet behaviour is the contract of
// state/tasks.
//
// The n replicas share one checkpoint store, as serve's replicas share
// the fleet's Redis (a task's run that asked is a checkpoint there).
func newTaskFleet(t *testing.T, n int, shared tasks.Store) []taskReplica {
	t.Helper()
	cps := checkpoint.NewMemory(nil)
	var out []taskReplica
	for range n {
		out = append(out, newTaskReplica(t, shared, cps, ""))
	}
	return out
}

// newTaskReplica starts one server with the tasks conformance fixtures on
// the tasks store and checkpoint store given (nil: its own), named
// replica (empty: a new name).
func newTaskReplica(t *testing.T, shared tasks.Store, cps checkpoint.Store, replica string) taskReplica {
	t.Helper()
	var out []taskReplica
	{
		dir := t.TempDir()
		files := fixtureFiles(t, filepath.Join(conformanceFixtures, "confirm_delete.json"),
			filepath.Join(conformanceFixtures, "slow_compute.json"), filepath.Join(conformanceFixtures, "greet.json"),
			filepath.Join(conformanceFixtures, "test_tool_with_task.json"))
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{MCPTasks: shared, Checkpoints: cps, Replica: replica})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t.Cleanup(s.Close)
		out = append(out, taskReplica{store: s, url: serveLoopback(t, Handler(Options{Store: s})) + "/mcp"})
	}
	return out[0]
}

// modernCall posts one 2026-07-28 request; caps are its clientCapabilities.
func modernCall(t *testing.T, url, method string, params map[string]any, caps map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out.Result, out.Error
}

var withTasks = map[string]any{"elicitation": map[string]any{}, "extensions": map[string]any{mcpserve.TasksExtension: map[string]any{}}}

// pollTask polls tasks/get until cond holds.
func pollTask(t *testing.T, url, id string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, perr := modernCall(t, url, "tasks/get", map[string]any{"taskId": id}, withTasks)
		if perr != nil {
			t.Fatalf("tasks/get %s: %v", id, perr)
		}
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: last seen %v", id, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMCPTaskAcrossReplicas: a task started on one replica is polled,
// answered and read on another, and a cancel sent to another replica
// stops the run on the one that runs it.
func TestMCPTaskAcrossReplicas(t *testing.T) {
	t.Run("memory", func(t *testing.T) { acrossReplicas(t, newTaskFleet(t, 2, tasks.NewMemory())) })
	t.Run("redis", func(t *testing.T) {
		// Each replica with its own connection to one Redis, as in serve.
		srv := redistest.Start(t)
		replica := func(name string) taskReplica {
			opts, _ := redis.ParseURL(srv.URL)
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			return newTaskReplica(t, tasks.NewRedis(rdb, "ruleagent:"), redisCheckpoints(rdb), name)
		}
		acrossReplicas(t, []taskReplica{replica("a"), replica("b")})
	})
}

func acrossReplicas(t *testing.T, fleet []taskReplica) {
	a, b := fleet[0], fleet[1]

	created, perr := modernCall(t, a.url, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{"filename": "x"}}, withTasks)
	if perr != nil || created["resultType"] != "task" || created["taskId"] == nil {
		t.Fatalf("tools/call: %v %v", created, perr)
	}
	if info, _ := created["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any); info["name"] != "ruleagent" {
		t.Errorf("the CreateTaskResult's serverInfo: %v", created)
	}
	id := created["taskId"].(string)
	asked := pollTask(t, b.url, id, func(m map[string]any) bool { return m["status"] == "input_required" })
	reqs, _ := asked["inputRequests"].(map[string]any)
	if _, ok := reqs["confirm"]; !ok {
		t.Fatalf("inputRequests on b: %v", asked)
	}
	// A malformed answer is refused by the replica that gets it.
	if _, perr := modernCall(t, b.url, "tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": "yes"}}}}, withTasks); perr == nil || perr["code"] != float64(mcpserve.CodeInvalidParams) {
		t.Fatalf("a malformed answer on b: %v", perr)
	}
	if ack, perr := modernCall(t, b.url, "tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, withTasks); perr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update on b: %v %v", ack, perr)
	}
	done := pollTask(t, b.url, id, func(m map[string]any) bool { return m["status"] == "completed" })
	content := done["result"].(map[string]any)["content"].([]any)
	if text := content[0].(map[string]any)["text"]; text != "deleted" {
		t.Fatalf("result read on b: %v", done)
	}

	// confirm_delete waits for its answer; the delay node of slow_compute
	// would ignore the cancel (components.CancelGrace).
	created, _ = modernCall(t, a.url, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{}}, withTasks)
	id = created["taskId"].(string)
	pollTask(t, b.url, id, func(m map[string]any) bool { return m["status"] == "input_required" })
	if ack, perr := modernCall(t, b.url, "tasks/cancel", map[string]any{"taskId": id}, withTasks); perr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel on b: %v %v", ack, perr)
	}
	pollTask(t, a.url, id, func(m map[string]any) bool { return m["status"] == "cancelled" })
	waitFor(t, "the run on a to stop", func() bool {
		return a.store.mcp.Stats().RunningTasks == 0
	})
}

// TestMCPTaskFailed: a task whose chain asks a client that declared no
// elicitation ends failed, with the JSON-RPC error and no result; a
// client without the extension gets a plain result, and tasks/get is
// refused with -32021.
func TestMCPTaskFailed(t *testing.T) {
	r := newTaskFleet(t, 1, nil)[0]
	noElicit := map[string]any{"extensions": map[string]any{mcpserve.TasksExtension: map[string]any{}}}
	created, _ := modernCall(t, r.url, "tools/call", map[string]any{"name": "confirm_delete", "arguments": map[string]any{}}, noElicit)
	failed := pollTask(t, r.url, created["taskId"].(string), func(m map[string]any) bool { return m["status"] == "failed" })
	e, _ := failed["error"].(map[string]any)
	if e["code"] != float64(mcpserve.CodeMissingCapability) || failed["result"] != nil {
		t.Fatalf("failed task: %v", failed)
	}
	plain, _ := modernCall(t, r.url, "tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}, map[string]any{})
	if plain["resultType"] != "complete" || plain["taskId"] != nil {
		t.Fatalf("a call without the extension: %v", plain)
	}
	if _, perr := modernCall(t, r.url, "tasks/get", map[string]any{"taskId": created["taskId"]}, map[string]any{}); perr == nil || perr["code"] != float64(mcpserve.CodeMissingCapability) {
		t.Fatalf("tasks/get without the extension: %v", perr)
	}
}

// TestMCPTaskBoundToCaller: a verified user's task is unknown to another
// user (-32602, as a task that never existed), and theirs to read and
// cancel; task ids are 128 random bits.
func TestMCPTaskBoundToCaller(t *testing.T) {
	r := newTaskFleet(t, 1, nil)[0]
	m := r.store.mcp
	ada := identity.Principal{User: "ada", Method: identity.MethodKey}
	bob := identity.Principal{User: "bob", Method: identity.MethodKey}
	ct := r.store.mcp
	ctx := identity.With(context.Background(), ada)
	out := ct.Call(ctx, "confirm_delete", mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, Tasks: true, CanElicit: true})
	var created map[string]any
	if err := json.Unmarshal(out.Raw, &created); err != nil {
		t.Fatalf("outcome %+v", out)
	}
	id := created["taskId"].(string)
	if len(id) != len("task-")+32 {
		t.Errorf("task id %q", id)
	}
	if _, err := m.Task(ctx, id, bob); err == nil || err.(*mcpserve.ProtocolError).Code != mcpserve.CodeInvalidParams {
		t.Errorf("bob reads ada's task: %v", err)
	}
	if err := m.CancelTask(ctx, id, bob); err == nil {
		t.Error("bob cancelled ada's task")
	}
	if err := m.UpdateTask(ctx, id, bob, nil); err == nil {
		t.Error("bob answered ada's task")
	}
	if got, err := m.Task(ctx, id, ada); err != nil || got.Owner != "ada" {
		t.Fatalf("ada's task: %v %+v", err, got)
	}
	if err := m.CancelTask(ctx, id, ada); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.Task(ctx, id, ada); got.Status != tasks.Cancelled {
		t.Errorf("after ada's cancel: %+v", got)
	}
	waitFor(t, "the run to stop", func() bool { return m.Stats().RunningTasks == 0 })
}

// TestMCPTaskLimit: beyond MaxTasks running here, a call answers a tool
// error instead of starting a run; a task that ends frees its place.
func TestMCPTaskLimit(t *testing.T) {
	r := newTaskFleet(t, 1, nil)[0]
	ct := mcpserve.New(mcpHost{r.store}, MCPOptions{MaxTasks: 1})
	t.Cleanup(ct.Close)
	call := mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, Tasks: true, CanElicit: true}
	first := ct.Call(context.Background(), "confirm_delete", call)
	if first.Raw == nil {
		t.Fatalf("first call: %+v", first)
	}
	if second := ct.Call(context.Background(), "confirm_delete", call); !second.IsError || second.Raw != nil {
		t.Fatalf("a call beyond the limit: %+v", second)
	}
	var created struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(first.Raw, &created)
	if err := ct.CancelTask(context.Background(), created.TaskID, identity.Principal{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the place to be free", func() bool { return ct.Stats().RunningTasks == 0 })
	if third := ct.Call(context.Background(), "confirm_delete", call); third.Raw == nil {
		t.Fatalf("a call once the task ended: %+v", third)
	}
}

// TestMCPTaskAfterInput: a chain marked mcpTaskAfterInput asks its
// question as a plain call (input_required, with a requestState, no task),
// and the retry that answers it answers a CreateTaskResult; the task's
// result carries the answer.
func TestMCPTaskAfterInput(t *testing.T) {
	r := newTaskFleet(t, 1, nil)[0]
	first, perr := modernCall(t, r.url, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}}, withTasks)
	if perr != nil || first["resultType"] != "input_required" || first["taskId"] != nil || first["requestState"] == nil {
		t.Fatalf("round 1: %v %v", first, perr)
	}
	second, perr := modernCall(t, r.url, "tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"requestState":   first["requestState"],
		"inputResponses": map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}}, withTasks)
	if perr != nil || second["resultType"] != "task" || second["requestState"] != nil {
		t.Fatalf("round 2: %v %v", second, perr)
	}
	done := pollTask(t, r.url, second["taskId"].(string), func(m map[string]any) bool { return m["status"] == "completed" })
	if text := done["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "Hello, Ada!" {
		t.Fatalf("result: %v", done)
	}
}

// TestMCPTaskOrphaned: a task whose replica died without ending it (its
// heartbeat is older than mcpserve.TaskDeadAfter) is failed by the replica that
// reads it next, with -32603; a task whose replica beats stays as it is.
func TestMCPTaskOrphaned(t *testing.T) {
	shared := tasks.NewMemory()
	r := newTaskFleet(t, 1, shared)[0]
	ctx := context.Background()
	for id, alive := range map[string]time.Time{"task-dead": time.Now().Add(-mcpserve.TaskDeadAfter - time.Second), "task-alive": time.Now()} {
		if err := shared.Create(ctx, &tasks.Task{ID: id, Tool: "slow_compute", Replica: "gone", Status: tasks.Working, TTL: time.Hour, Alive: alive}); err != nil {
			t.Fatal(err)
		}
	}
	dead, perr := modernCall(t, r.url, "tasks/get", map[string]any{"taskId": "task-dead"}, withTasks)
	if e, _ := dead["error"].(map[string]any); perr != nil || dead["status"] != "failed" || e["code"] != float64(mcpserve.CodeInternal) {
		t.Fatalf("the dead replica's task: %v %v", dead, perr)
	}
	if alive, _ := modernCall(t, r.url, "tasks/get", map[string]any{"taskId": "task-alive"}, withTasks); alive["status"] != "working" {
		t.Fatalf("the live replica's task: %v", alive)
	}
}

// TestMCPTaskShutdown: a server that closes fails the tasks it runs, so
// that their clients are not left polling a task that will never end; a
// task whose run paused for its client's answers runs nowhere, and is
// answered on the next server on the same stores.
func TestMCPTaskShutdown(t *testing.T) {
	shared, cps := tasks.NewMemory(), checkpoint.NewMemory(nil)
	r := newTaskReplica(t, shared, cps, "")
	slow := mcpserve.ToolCall{Args: json.RawMessage(`{"seconds": 1}`), Modern: true, Tasks: true, CanElicit: true}
	out := r.store.mcp.Call(context.Background(), "slow_compute", slow)
	var created struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(out.Raw, &created); err != nil {
		t.Fatalf("outcome %+v", out)
	}
	asked := r.store.mcp.Call(context.Background(), "confirm_delete", mcpserve.ToolCall{Args: json.RawMessage(`{"filename": "x"}`), Modern: true, Tasks: true, CanElicit: true})
	var paused struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(asked.Raw, &paused); err != nil {
		t.Fatalf("outcome %+v", asked)
	}
	pollTask(t, r.url, paused.TaskID, func(m map[string]any) bool { return m["status"] == "input_required" })
	r.store.Close()
	got, err := shared.Get(context.Background(), created.TaskID)
	if err != nil || got.Status != tasks.Failed || !bytes.Contains(got.Error, []byte(mcpserve.ErrServerClosed.Error())) {
		t.Fatalf("after the shutdown: %v %+v", err, got)
	}

	next := newTaskReplica(t, shared, cps, "")
	if ack, perr := modernCall(t, next.url, "tasks/update", map[string]any{"taskId": paused.TaskID,
		"inputResponses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}, withTasks); perr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update on the next server: %v %v", ack, perr)
	}
	done := pollTask(t, next.url, paused.TaskID, func(m map[string]any) bool { return m["status"] == "completed" })
	if text := done["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; text != "deleted" {
		t.Fatalf("the paused task's result: %v", done)
	}

	// serve's grace period over: the runs left are cancelled with
	// runs.ErrShutdown before the store closes.
	out = next.store.mcp.Call(context.Background(), "slow_compute", slow)
	if err := json.Unmarshal(out.Raw, &created); err != nil {
		t.Fatalf("outcome %+v", out)
	}
	pollTask(t, next.url, created.TaskID, func(m map[string]any) bool { return m["status"] == "working" })
	next.store.Runs().CancelAll(runs.ErrShutdown)
	failed := pollTask(t, next.url, created.TaskID, func(m map[string]any) bool { return m["status"] != "working" })
	if failed["status"] != "failed" {
		t.Fatalf("after the grace period: %v", failed)
	}
}

// TestMCPTaskPausedIsNotOrphaned: a task paused on a checkpoint has no
// heartbeat, and is not taken for one whose replica died; once its
// questions waited longer than the input timeout, it is failed.
func TestMCPTaskPausedIsNotOrphaned(t *testing.T) {
	shared := tasks.NewMemory()
	r := newTaskFleet(t, 1, shared)[0]
	ctx := context.Background()
	old := time.Now().Add(-mcpserve.TaskDeadAfter - time.Second)
	for id, changed := range map[string]time.Time{"task-paused": old, "task-expired": time.Now().Add(-mcpserve.DefaultInputTimeout - time.Second)} {
		if err := shared.Create(ctx, &tasks.Task{ID: id, Tool: "confirm_delete", Replica: "gone", Status: tasks.InputRequired, TTL: time.Hour,
			Alive: old, Paused: "c.eA.x", InputRequests: json.RawMessage(`{"confirm":{}}`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.Update(ctx, id, func(t *tasks.Task) error { t.Changed, t.Alive = changed, old; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got, perr := modernCall(t, r.url, "tasks/get", map[string]any{"taskId": "task-paused"}, withTasks); perr != nil || got["status"] != "input_required" {
		t.Fatalf("the paused task: %v %v", got, perr)
	}
	expired, perr := modernCall(t, r.url, "tasks/get", map[string]any{"taskId": "task-expired"}, withTasks)
	if e, _ := expired["error"].(map[string]any); perr != nil || expired["status"] != "failed" || !strings.Contains(e["message"].(string), "in time") {
		t.Fatalf("the expired task: %v %v", expired, perr)
	}
}
