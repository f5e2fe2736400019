package components

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/tools"
)

// waitingApprover approves at once, as a person waited for would.
type waitingApprover struct{}

func (waitingApprover) Approve(context.Context, tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	return tools.ApprovalDecision{Approved: true}, nil
}

// pausingApprover pauses every call it is asked about; resumed, it
// approves the interrupts it raised.
type pausingApprover struct {
	mu     sync.Mutex
	raised map[string]bool
}

func (p *pausingApprover) Approve(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.InterruptID != "" {
		return tools.ApprovalDecision{Approved: p.raised[req.InterruptID]}, nil
	}
	if p.raised == nil {
		p.raised = map[string]bool{}
	}
	id := "int-" + req.RunID + "-" + req.ToolCallID
	p.raised[id] = true
	return tools.ApprovalDecision{}, &tools.PauseError{InterruptID: id}
}

// A chain whose sub-agent's call needs approval, with a waiting approver
// and with a pausing one: the paused chain run ends with its suspension
// (the sub-agent's inside the orchestrator's pending call), no end and
// nothing after the node; resumed (entered at the agent node with the
// suspension, after a trip through JSON) it goes on into the sub-agent,
// whose approved call runs once, and the chain ends as the waiting run
// did, with the same events (the node after the agent runs once).
func TestChainRunPausesInASubAgentAndResumes(t *testing.T) {
	script := llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am reviewer."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if r.Turn() == 0 {
				return llmtest.Calls(llmtest.Call("test_add", `{"a":2,"b":2}`))
			}
			return llmtest.Reply("sum " + r.ToolResults()[0].Content)
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am orchestrator."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if r.Turn() == 0 {
				return llmtest.Calls(llmtest.Call("Code_Reviewer", `{"message":"add them"}`))
			}
			return llmtest.Reply("reviewer said: " + r.ToolResults()[0].Content)
		})},
	)
	run := func(approver tools.Approver) (types.RuleEngine, *llmtest.Server, *ChainRun, *events.Recorder) {
		srv := llmtest.NewServer(t, script)
		p := pool(t)
		// The reviewer's calls of test_add need approval.
		deploy(t, p, chain("reviewer", "Code Reviewer", map[string]any{"description": "Reviews."}, []map[string]any{agentNode(srv.URL, "I am reviewer.",
			map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}}, "approval": map[string]any{"tools": []any{"test_add"}}})}))
		orch := deploy(t, p, chain("orchestrator", "Orchestrator", nil, []map[string]any{
			agentNode(srv.URL, "I am orchestrator.", map[string]any{"tools": []any{agentTool("reviewer")}}),
			{"id": "after", "type": "test/mark", "name": "After"},
		}, [3]string{"agent", "after", "Success"}))
		rec := &events.Recorder{}
		ctx := tools.WithApprover(context.Background(), approver)
		md := types.NewMetadata()
		md.PutValue("runId", "run-1")
		md.PutValue("threadId", "thread-1")
		r := StartChain(ctx, orch, types.NewMsg(0, "CHAT", types.TEXT, md, "review"), ChainRunOptions{Sink: rec})
		waitDone(t, r)
		return orch, srv, r, rec
	}
	before := testAddCalls.Load()
	_, _, waited, want := run(waitingApprover{})
	if s, _ := waited.Suspended(); s != nil || len(waited.Ends()) != 1 || waited.Ends()[0].Msg.GetData() != "reviewer said: sum 4" {
		t.Fatalf("the waiting run: %+v", waited.Ends())
	}
	afterWaiting := testAddCalls.Load()

	ap := &pausingApprover{}
	orch, _, paused, got := run(ap)
	s, err := paused.Suspended()
	if err != nil || s == nil {
		t.Fatalf("the run did not pause: %v %+v", err, paused.Ends())
	}
	if len(paused.Ends()) != 0 || len(marked("orchestrator")) != 0 || testAddCalls.Load() != afterWaiting {
		t.Fatalf("the paused run went on: ends %+v, marked %d", paused.Ends(), len(marked("orchestrator")))
	}
	ids, err := s.Interrupts()
	if err != nil || len(ids) != 1 || !strings.Contains(ids[0], "sub-") {
		t.Fatalf("the suspension waits for %v (%v), want the sub-agent's interrupt", ids, err)
	}
	b, _ := json.Marshal(s)
	s2, err := DecodeSuspension(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tools.WithApprover(context.Background(), ap)
	resumed := StartChain(ctx, orch, s2.Message(), ChainRunOptions{Sink: got, Resume: s2})
	waitDone(t, resumed)
	if again, _ := resumed.Suspended(); again != nil || len(resumed.Ends()) != 1 || resumed.Ends()[0].Msg.GetData() != "reviewer said: sum 4" {
		t.Fatalf("the resumed run: %+v", resumed.Ends())
	}
	if n := len(marked("orchestrator")); n != 1 {
		t.Errorf("the node after the agent ran %d times", n)
	}
	if w, g := afterWaiting-before, testAddCalls.Load()-afterWaiting; w != 1 || g != 1 {
		t.Errorf("test_add ran %d times waiting, %d paused and resumed; want once each", w, g)
	}
	if w, g := normalised(want.Events()), normalised(got.Events()); !reflect.DeepEqual(w, g) {
		t.Errorf("events differ:\nwaited  %v\nresumed %v", w, g)
	}
}

func waitDone(t *testing.T, r *ChainRun) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the chain run did not end")
	}
}

// normalised is the events without times, the scripted model's address,
// and with the sub-agent's random run id named.
func normalised(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		e.Timestamp, e.Meta.DurationMs = 0, 0
		e.Usage = nil
		b := string(e.AppendJSON(nil))
		if j := strings.Index(b, "sub-"); j >= 0 && len(b) >= j+16 {
			b = strings.ReplaceAll(b, b[j:j+16], "sub-X")
		}
		out[i] = b
	}
	return out
}

// A resumed sub-agent that cannot go on (its session was written while it
// was paused) ends its own run with the error, so that the sub-agent the
// resumed stream opened again is closed (SUBAGENT_ERROR), and its caller
// reads the failure as the call's result.
func TestResumedSubAgentThatCannotGoOnEndsItsRun(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am reviewer."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if len(r.ToolResults()) == 0 {
				return llmtest.Calls(llmtest.Call("test_add", `{"a":2,"b":2}`))
			}
			return llmtest.Reply("sum")
		})},
		llmtest.Rule{Match: llmtest.SystemContains("I am orchestrator."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply("the reviewer failed: " + res[0].Content)
			}
			return llmtest.Calls(llmtest.Call("Code_Reviewer", `{"message":"add them"}`))
		})},
	))
	store := sessions.NewMemory()
	p := rulego.NewRuleGo()
	t.Cleanup(p.Stop)
	for _, dsl := range []map[string]any{
		chain("reviewer", "Code Reviewer", map[string]any{"description": "Reviews."}, []map[string]any{agentNode(srv.URL, "I am reviewer.",
			map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}}, "approval": map[string]any{"tools": []any{"test_add"}},
				"session": map[string]any{"scope": "thread"}})}),
		chain("orchestrator", "Orchestrator", nil, []map[string]any{agentNode(srv.URL, "I am orchestrator.", map[string]any{"tools": []any{agentTool("reviewer")}})}),
	} {
		b, _ := json.Marshal(dsl)
		if _, err := p.New(dsl["ruleChain"].(map[string]any)["id"].(string), b, rulego.WithConfig(sessionConfig(store))); err != nil {
			t.Fatal(err)
		}
	}
	orch, _ := p.Get("orchestrator")
	ap := &pausingApprover{}
	ctx := tools.WithApprover(context.Background(), ap)
	md := types.NewMetadata()
	md.PutValue("threadId", "t-1")
	rec := &events.Recorder{}
	r := StartChain(ctx, orch, types.NewMsg(0, "CHAT", types.TEXT, md, "review"), ChainRunOptions{Sink: rec})
	waitDone(t, r)
	s, err := r.Suspended()
	if err != nil || s == nil {
		t.Fatalf("no pause: %v", err)
	}
	// Another run writes the sub-agent's session meanwhile.
	key := sessions.Key{Agent: "reviewer", Scope: sessions.ScopeThread, Thread: "t-1"}
	c, err := sessions.Begin(ctx, store, &sessions.Config{Scope: sessions.ScopeThread, Agent: "reviewer"}, key,
		[]events.Message{{Role: events.RoleUser, Content: "meanwhile"}}, sessions.Run{RunID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Recall(ctx, nil, func(events.Event) {}); err != nil {
		t.Fatal(err)
	}
	if err := c.Keep(ctx, []events.Message{{Role: events.RoleAssistant, Content: "ok"}}, nil, func(events.Event) {}); err != nil {
		t.Fatal(err)
	}
	c.Release()

	resumed := &events.Recorder{}
	r = StartChain(ctx, orch, s.Message(), ChainRunOptions{Sink: resumed, Resume: s})
	waitDone(t, r)
	var subErr *events.Event
	for _, e := range resumed.Events() {
		if e.Type == events.SubagentError {
			subErr = &e
		}
	}
	if subErr == nil || subErr.Code != agent.CodeSession || !strings.Contains(subErr.Message, "changed while the run was paused") {
		t.Fatalf("the resumed sub-agent did not end with its error: %+v\n%v", subErr, resumed.Types())
	}
	if ends := r.Ends(); len(ends) != 1 || !strings.Contains(ends[0].Msg.GetData(), "the reviewer failed: Error (execution_failed)") {
		t.Errorf("the caller's answer: %+v", ends)
	}
}
