package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ruleagent/ruleagent/internal/redistest"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/mcpserve"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// redisCheckpoints is the checkpoint store serve gives a fleet on rdb.
func redisCheckpoints(rdb redis.UniversalClient) checkpoint.Store {
	return checkpoint.NewRedis(rdb, "ruleagent:", func(replica string) string { return "ruleagent:alive:" + replica })
}

// greetReplica serves the greet chain from a store on checkpoint store cps,
// named replica: one "replica" of a fleet, or one process of a machine.
func greetReplica(t *testing.T, cps checkpoint.Store, replica string) (*Store, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.json"), []byte(greetDSL("greet")), 0o644); err != nil {
		t.Fatal(err)
	}
	s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{Checkpoints: cps, Replica: replica})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Cleanup(s.Close)
	return s, serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
}

// TestMCPInputAcrossReplicas: a call whose chain asks is a checkpoint in
// the store the replicas share: the retry with the answer completes it on
// the other replica, and a second retry with the same state is refused,
// on either replica.
func TestMCPInputAcrossReplicas(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		cps := checkpoint.NewMemory(nil)
		_, a := greetReplica(t, cps, "a")
		_, b := greetReplica(t, cps, "b")
		answeredElsewhere(t, a, b)
	})
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t)
		replica := func(name string) string {
			opts, _ := redis.ParseURL(srv.URL)
			rdb := redis.NewClient(opts)
			t.Cleanup(func() { rdb.Close() })
			_, url := greetReplica(t, redisCheckpoints(rdb), name)
			return url
		}
		answeredElsewhere(t, replica("a"), replica("b"))
	})
}

func answeredElsewhere(t *testing.T, a, b string) {
	t.Helper()
	first := toolsCall(t, a, "greet", nil, elicitCaps)
	if _, ok := first.inputRequests(t)["user_name"]; !ok {
		t.Fatalf("no user_name question: %v", first.result)
	}
	state, _ := first.result["requestState"].(string)
	answer := map[string]any{"requestState": state, "inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}}
	done := toolsCall(t, b, "greet", answer, elicitCaps)
	if done.result["resultType"] != "complete" || done.text() != "Hello, Ada!" {
		t.Fatalf("the retry on the other replica: %d %v %v", done.status, done.result, done.err)
	}
	for name, url := range map[string]string{"the first replica": a, "the same replica": b} {
		again := toolsCall(t, url, "greet", answer, elicitCaps)
		if again.status != http.StatusBadRequest || again.err == nil || again.err["code"] != float64(mcpserve.CodeInvalidParams) ||
			!strings.Contains(again.err["message"].(string), "has ended") {
			t.Errorf("a second retry on %s: %d %v %v", name, again.status, again.err, again.result)
		}
	}
}

// TestMCPInputAfterRestart: a call asked before the server restarted is
// answered by the next process on the same state file.
func TestMCPInputAfterRestart(t *testing.T) {
	stores := sharedBolt(t)
	before, url := greetReplica(t, stores("before"), "before")
	first := toolsCall(t, url, "greet", nil, elicitCaps)
	first.inputRequests(t)
	before.Close()
	_, url = greetReplica(t, stores("after"), "after")
	done := toolsCall(t, url, "greet", map[string]any{"requestState": first.result["requestState"],
		"inputResponses": map[string]any{"user_name": accept(map[string]any{"name": "Ada"})}}, elicitCaps)
	if done.result["resultType"] != "complete" || done.text() != "Hello, Ada!" {
		t.Fatalf("the retry after the restart: %d %v %v", done.status, done.result, done.err)
	}
}

// TestMCPInputStateBoundToCaller: the checkpoint of a verified user's call
// is answered by that user only, on any replica: another user's retry
// with the state is refused as an altered one is (-32602), and leaves it
// to its owner.
func TestMCPInputStateBoundToCaller(t *testing.T) {
	cps := checkpoint.NewMemory(nil)
	a, _ := greetReplica(t, cps, "a")
	b, _ := greetReplica(t, cps, "b")
	ada := identity.With(context.Background(), identity.Principal{User: "ada", Method: identity.MethodKey})
	bob := identity.With(context.Background(), identity.Principal{User: "bob", Method: identity.MethodKey})
	call := mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true}
	out := a.mcp.Call(ada, "greet", call)
	if len(out.Questions) != 1 || out.State == "" {
		t.Fatalf("no question: %+v", out)
	}
	call.State = out.State
	call.Responses = map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Bob"}}`)}
	if got := b.mcp.Call(bob, "greet", call); got.Err == nil || got.Err.Code != mcpserve.CodeInvalidParams || !strings.Contains(got.Err.Message, "another caller") {
		t.Fatalf("bob answers ada's call: %+v", got)
	}
	call.Responses = map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	if got := b.mcp.Call(ada, "greet", call); got.Err != nil || got.Text != "Hello, Ada!" {
		t.Fatalf("ada answers her call on b: %+v", got)
	}
}

// TestMCPInputClaimedOnce: retries racing with one requestState on two
// replicas go on with the run once: one completes the call, every other
// one is refused with -32602.
func TestMCPInputClaimedOnce(t *testing.T) {
	cps := checkpoint.NewMemory(nil)
	a, _ := greetReplica(t, cps, "a")
	b, _ := greetReplica(t, cps, "b")
	for range 5 {
		out := a.mcp.Call(context.Background(), "greet", mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true})
		if out.State == "" {
			t.Fatalf("no question: %+v", out)
		}
		retry := mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true, State: out.State,
			Responses: map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}}
		results := make(chan mcpserve.ToolOutcome, 4)
		for i := range 4 {
			s := []*Store{a, b}[i%2]
			go func() { results <- s.mcp.Call(context.Background(), "greet", retry) }()
		}
		completed := 0
		for range 4 {
			got := <-results
			switch {
			case got.Err == nil && got.Text == "Hello, Ada!":
				completed++
			case got.Err == nil || got.Err.Code != mcpserve.CodeInvalidParams:
				t.Fatalf("a racing retry: %+v", got)
			}
		}
		if completed != 1 {
			t.Fatalf("%d retries completed the call, want 1", completed)
		}
	}
}

// TestMCPInputParallelQuestionsPause: two branches that ask at once pause
// the run with both questions; the retry answering both enters the chain
// again at both nodes, on another replica, and the call completes.
func TestMCPInputParallelQuestionsPause(t *testing.T) {
	cps := checkpoint.NewMemory(nil)
	stores := make([]*Store, 2)
	for i := range stores {
		dir := t.TempDir()
		b, err := os.ReadFile(filepath.Join(conformanceFixtures, "multi_input.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "multi_input.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, errs := OpenStoreWith(dir, NewConfig(nil), StoreOptions{Checkpoints: cps})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t.Cleanup(s.Close)
		stores[i] = s
	}
	call := mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true}
	out := stores[0].mcp.Call(context.Background(), "multi_input", call)
	if len(out.Questions) != 2 || out.State == "" {
		t.Fatalf("want two questions: %+v", out)
	}
	call.State = out.State
	call.Responses = map[string]json.RawMessage{"first": json.RawMessage(`{"action":"accept","content":{"name":"one"}}`)}
	if got := stores[1].mcp.Call(context.Background(), "multi_input", call); got.Err == nil || !strings.Contains(got.Err.Message, "missing second") {
		t.Fatalf("one answer of two: %+v", got)
	}
	call.Responses["second"] = json.RawMessage(`{"action":"decline"}`)
	got := stores[1].mcp.Call(context.Background(), "multi_input", call)
	if got.Err != nil || got.IsError || len(got.Questions) > 0 || !strings.Contains(got.Text, `"action":"`) {
		t.Fatalf("both answered: %+v", got)
	}
	if list, err := cps.List(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("checkpoints left: %v %v", list, err)
	}
}

// TestMCPApprovalAfterRestart: an agent's approval asked of a 2026-07-28
// client pauses the run as the run route's interrupts do: the next process
// on the same state file takes the answer and goes on with the run, and
// the same state is refused after that.
func TestMCPApprovalAfterRestart(t *testing.T) {
	e := newMCPEnvWith(t, map[string][]byte{"careful.json": []byte(carefulDSL)})
	stores := sharedBolt(t)
	open := func(replica string) (*Store, string) {
		s, errs := OpenStoreWith(e.dir, NewConfig(e.globals(t)), StoreOptions{Checkpoints: stores(replica), Replica: replica})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t.Cleanup(s.Close)
		return s, serveLoopback(t, Handler(Options{Store: s})) + "/mcp"
	}
	before, url := open("before")
	args := map[string]any{"message": "What do the notes say?"}
	first := toolsCall(t, url, "careful", map[string]any{"arguments": args}, elicitCaps)
	var key string
	for k := range first.inputRequests(t) {
		key = k
	}
	if !strings.HasPrefix(key, "approve_") {
		t.Fatalf("the question's key: %q", key)
	}
	before.Close()
	_, url = open("after")
	retry := map[string]any{"arguments": args, "requestState": first.result["requestState"], "inputResponses": map[string]any{key: accept(map[string]any{})}}
	done := toolsCall(t, url, "careful", retry, elicitCaps)
	if done.text() != readerAnswer {
		t.Fatalf("approved after the restart: %v %v", done.result, done.err)
	}
	if res := lastToolResult(t, e); !strings.Contains(res, readerNotes) {
		t.Errorf("the approved read returned %q", res)
	}
	again := toolsCall(t, url, "careful", retry, elicitCaps)
	if again.err == nil || again.err["code"] != float64(mcpserve.CodeInvalidParams) || !strings.Contains(again.err["message"].(string), "has ended") {
		t.Errorf("a second retry: %v %v", again.err, again.result)
	}
}

// TestMCPApprovalWithoutElicitation: an agent's approval asked of a
// 2026-07-28 client without elicitation is -32021, and its paused run is
// not left behind.
func TestMCPApprovalWithoutElicitation(t *testing.T) {
	e := newMCPEnvWith(t, map[string][]byte{"careful.json": []byte(carefulDSL)})
	url := serveLoopback(t, Handler(Options{Store: e.store})) + "/mcp"
	got := toolsCall(t, url, "careful", map[string]any{"arguments": map[string]any{"message": "What do the notes say?"}}, map[string]any{})
	if got.err == nil || got.err["code"] != float64(mcpserve.CodeMissingCapability) || !strings.Contains(got.err["message"].(string), "Approve read") {
		t.Fatalf("no elicitation: %v %v", got.err, got.result)
	}
	if list, err := e.store.checkpoints.List(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("paused runs left: %v %v", list, err)
	}
}

// TestMCPTaskApprovalOnAnotherReplica: an agent's approval in a task
// pauses its run as an interrupt checkpoint; tasks/update on another
// replica (the first one closed) approves, and the task completes there.
func TestMCPTaskApprovalOnAnotherReplica(t *testing.T) {
	e := newMCPEnvWith(t, map[string][]byte{"careful.json": []byte(carefulDSL)})
	shared, cps := tasks.NewMemory(), checkpoint.NewMemory(nil)
	open := func() *Store {
		s, errs := OpenStoreWith(e.dir, NewConfig(e.globals(t)), StoreOptions{Checkpoints: cps, MCPTasks: shared})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		t.Cleanup(s.Close)
		return s
	}
	a, b := open(), open()
	ctx := context.Background()
	out := a.mcp.Call(ctx, "careful", mcpserve.ToolCall{Args: json.RawMessage(`{"message": "What do the notes say?"}`), Modern: true, Tasks: true, CanElicit: true})
	var created struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(out.Raw, &created); err != nil || created.TaskID == "" {
		t.Fatalf("outcome %+v", out)
	}
	var key string
	waitFor(t, "the task to ask", func() bool {
		got, err := shared.Get(ctx, created.TaskID)
		if err != nil || got.Status != tasks.InputRequired || got.Paused == "" {
			return false
		}
		var reqs map[string]json.RawMessage
		_ = json.Unmarshal(got.InputRequests, &reqs)
		for k := range reqs {
			key = k
		}
		return true
	})
	a.Close()
	if err := b.mcp.UpdateTask(ctx, created.TaskID, identity.Principal{}, map[string]json.RawMessage{key: json.RawMessage(`{"action":"accept","content":{}}`)}); err != nil {
		t.Fatalf("tasks/update on b: %v", err)
	}
	waitFor(t, "the task to complete", func() bool {
		got, err := shared.Get(ctx, created.TaskID)
		return err == nil && got.Status == tasks.Completed && strings.Contains(string(got.Result), readerAnswer)
	})
	if res := lastToolResult(t, e); !strings.Contains(res, readerNotes) {
		t.Errorf("the approved read returned %q", res)
	}
}

// TestMCPInputRetryOnADrainingReplica: a replica that drains does not
// claim a paused call: the retry it gets is refused, and the checkpoint is
// left for another replica, which completes the call.
func TestMCPInputRetryOnADrainingReplica(t *testing.T) {
	cps := checkpoint.NewMemory(nil)
	a, _ := greetReplica(t, cps, "a")
	b, _ := greetReplica(t, cps, "b")
	call := mcpserve.ToolCall{Args: json.RawMessage(`{}`), Modern: true, CanElicit: true}
	out := a.mcp.Call(context.Background(), "greet", call)
	if out.State == "" {
		t.Fatalf("no question: %+v", out)
	}
	a.Drain()
	call.State = out.State
	call.Responses = map[string]json.RawMessage{"user_name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}
	if got := a.mcp.Call(context.Background(), "greet", call); !got.IsError || !strings.Contains(got.Text, "draining") {
		t.Fatalf("the retry on the draining replica: %+v", got)
	}
	if got := b.mcp.Call(context.Background(), "greet", call); got.Err != nil || got.Text != "Hello, Ada!" {
		t.Fatalf("the retry on the other replica: %+v", got)
	}
}
