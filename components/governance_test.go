package components

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// The tool policy and limits end to end, on a real rule engine: what the
// model is offered, what a call it makes anyway does (a canary file that
// bash would create stays absent), and what sub-agents and the agents of
// rule-chain tools inherit.

// bashTool is the real bash builtin, and canaryCall the call that would
// create the canary file in the workspace.
var (
	bashTool   = map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeout": "10s"}}
	readTool   = map[string]any{"type": "builtin", "name": "read"}
	canaryCall = llmtest.Call("bash", `{"command":"touch canary"}`)
)

func canaryAbsent(t *testing.T, ws string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(ws, "canary")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: canary %v", err)
	}
}

// callsBashThenEchoes calls bash whether or not it was offered (a
// hallucinated or remembered name), then answers with what it read.
func callsBashThenEchoes(r *llmtest.Request) llmtest.Response {
	if res := r.ToolResults(); len(res) > 0 {
		return llmtest.Reply(res[len(res)-1].Content)
	}
	return llmtest.Calls(canaryCall)
}

func TestNodePolicyEndToEnd(t *testing.T) {
	ws := t.TempDir()
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(callsBashThenEchoes))
	id, dsl := agentChain(t, srv.URL, map[string]any{"workspace": ws, "tools": []any{readTool, bashTool},
		"policy": map[string]any{"profile": "readonly"}})
	r := send(t, context.Background(), newEngine(t, id, dsl), "go", nil, true)
	answer := oneTerminal(t, r, types.Success).msg.GetData()
	canaryAbsent(t, ws)
	for i, req := range srv.Requests() {
		if got := req.ToolNames(); !slices.Equal(got, []string{"read"}) {
			t.Fatalf("request %d offered %v", i, got)
		}
	}
	if !strings.Contains(answer, "Error (permission_denied)") || !strings.Contains(answer, "bash is not part of the readonly profile of the tool policy of node "+id+"/agent") {
		t.Fatalf("the model read %q", answer)
	}
	checkEvents(t, &r.rec)
}

func TestPolicyConfigErrorsFailInit(t *testing.T) {
	cases := []struct {
		name string
		cfg  map[string]any
		msg  string
	}{
		{"unknown profile", map[string]any{"policy": map[string]any{"profile": "everything"}}, `policy.profile: unknown profile "everything"`},
		{"unknown group", map[string]any{"policy": map[string]any{"alsoAllow": []any{"group:files"}}}, `policy.alsoAllow[0]: unknown group "group:files"`},
		{"negative budget", map[string]any{"limits": map[string]any{"concurrentRuns": -2}}, "limits.concurrentRuns: must not be negative"},
		{"bad idle", map[string]any{"limits": map[string]any{"sessionIdle": "a while"}}, "limits.sessionIdle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, dsl := agentChain(t, "http://127.0.0.1:1/v1", c.cfg)
			_, err := rulego.NewRuleGo().New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want %q", err, c.msg)
			}
		})
	}
}

// reviewerAndBoss is a boss agent with a sub-agent tool to the reviewer,
// both with bash; the reviewer's model calls bash, the boss delegates.
func reviewerAndBoss(t *testing.T, srvURL string, ws string, bossPolicy map[string]any, via map[string]any) (types.RuleEngine, *rulego.RuleGo) {
	t.Helper()
	p := pool(t)
	deploy(t, p, chain("reviewer", "Reviewer", map[string]any{"description": "Reviews."}, []map[string]any{
		agentNode(srvURL, "I am reviewer.", map[string]any{"workspace": ws, "tools": []any{bashTool}})}))
	boss := deploy(t, p, chain("boss", "Boss", nil, []map[string]any{
		agentNode(srvURL, "I am boss.", map[string]any{"workspace": ws, "tools": []any{bashTool, via}, "policy": bossPolicy})}))
	return boss, p
}

func delegatingScript(tool string) llmtest.Script {
	return llmtest.Route(
		llmtest.Rule{Match: llmtest.SystemContains("I am reviewer."), Script: llmtest.ScriptFunc(callsBashThenEchoes)},
		llmtest.Rule{Match: llmtest.SystemContains("I am boss."), Script: llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
			if res := r.ToolResults(); len(res) > 0 {
				return llmtest.Reply(res[0].Content)
			}
			return llmtest.Calls(llmtest.Call(tool, `{"message":"check it"}`))
		})},
	)
}

// reviewerRequests are the LLM requests of the reviewer agent.
func reviewerRequests(srv *llmtest.Server) []*llmtest.Request {
	var out []*llmtest.Request
	for _, r := range srv.Requests() {
		if strings.Contains(r.System(), "I am reviewer.") {
			out = append(out, r)
		}
	}
	return out
}

func TestSubAgentInheritsRestrictions(t *testing.T) {
	cases := []struct {
		name   string
		policy map[string]any
		// boss: the boss itself is offered bash.
		boss bool
		want string
	}{
		{"subagentDeny", map[string]any{"subagentDeny": []any{"group:runtime"}}, true,
			"bash is denied to the agents it runs by the tool policy of node boss/agent (subagentDeny group:runtime)"},
		{"caller deny", map[string]any{"deny": []any{"bash"}}, false,
			"bash is denied by the tool policy of node boss/agent, which also binds the agents it runs (deny entry)"},
		{"caller allow list", map[string]any{"allow": []any{"group:agents"}}, false,
			"bash is not in the allow list of the tool policy of node boss/agent, which also binds the agents it runs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			srv := llmtest.NewServer(t, delegatingScript("Reviewer"))
			boss, _ := reviewerAndBoss(t, srv.URL, ws, c.policy, agentTool("reviewer"))
			r := send(t, context.Background(), boss, "review", nil, true)
			answer := oneTerminal(t, r, types.Success).msg.GetData()
			canaryAbsent(t, ws)
			if !strings.Contains(answer, c.want) {
				t.Fatalf("the sub-agent's model read %q", answer)
			}
			reqs := reviewerRequests(srv)
			if len(reqs) != 2 || len(reqs[0].ToolNames()) != 0 {
				t.Fatalf("the reviewer was offered %v", reqs[0].ToolNames())
			}
			bossTools := srv.Requests()[0].ToolNames()
			if slices.Contains(bossTools, "bash") != c.boss {
				t.Fatalf("the boss was offered %v", bossTools)
			}
			checkEvents(t, &r.rec)
		})
	}
}

func TestRuleChainToolAgentInherits(t *testing.T) {
	ws := t.TempDir()
	srv := llmtest.NewServer(t, delegatingScript("ask_reviewer"))
	chainTool := map[string]any{"type": "rulechain", "name": "ask_reviewer", "targetId": "reviewer", "description": "Asks the reviewer.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}}}}
	boss, _ := reviewerAndBoss(t, srv.URL, ws, map[string]any{"deny": []any{"group:runtime"}}, chainTool)
	r := send(t, context.Background(), boss, "review", nil, false)
	answer := oneTerminal(t, r, types.Success).msg.GetData()
	canaryAbsent(t, ws)
	if !strings.Contains(answer, "bash is denied by the tool policy of node boss/agent, which also binds the agents it runs (deny group:runtime)") {
		t.Fatalf("the chain's agent read %q", answer)
	}
	if reqs := reviewerRequests(srv); len(reqs) != 2 || len(reqs[0].ToolNames()) != 0 {
		t.Fatalf("the chain's agent was offered tools: %+v", reqs)
	}
	// The same chain run directly is not restricted: the restriction came
	// with the call.
	p2 := pool(t)
	direct := deploy(t, p2, chain("reviewer", "Reviewer", nil, []map[string]any{
		agentNode(srv.URL, "I am reviewer.", map[string]any{"workspace": ws, "tools": []any{bashTool}})}))
	send(t, context.Background(), direct, "review", nil, false)
	if _, err := os.Stat(filepath.Join(ws, "canary")); err != nil {
		t.Fatalf("run directly, the reviewer's bash did not run: %v", err)
	}
}

func TestServerGovernanceViaConfig(t *testing.T) {
	ws := t.TempDir()
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(callsBashThenEchoes))
	pol, err := policy.Parse([]byte(`{"deny":["group:runtime"]}`))
	if err != nil {
		t.Fatal(err)
	}
	aud := &audit.Recorder{}
	cfg := rulego.NewConfig()
	RegisterGovernance(&cfg, &Governance{Policy: pol, Audit: aud})
	// The node allows bash explicitly: the server's deny still wins.
	id, dsl := agentChain(t, srv.URL, map[string]any{"workspace": ws, "tools": []any{readTool, bashTool},
		"policy": map[string]any{"profile": "coding", "alsoAllow": []any{"bash"}}})
	p := pool(t)
	e, err := p.New(id, dsl, rulego.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	r := send(t, context.Background(), e, "go", map[string]string{"userId": "alice", "threadId": "t-9"}, false)
	answer := oneTerminal(t, r, types.Success).msg.GetData()
	canaryAbsent(t, ws)
	if !strings.Contains(answer, "bash is denied by the server's tool policy (deny group:runtime)") {
		t.Fatalf("answer %q", answer)
	}
	if got := srv.Requests()[0].ToolNames(); !slices.Equal(got, []string{"read"}) {
		t.Fatalf("offered %v", got)
	}
	recs := aud.Records()
	if len(recs) != 1 {
		t.Fatalf("audit %+v", recs)
	}
	a := recs[0]
	if a.Kind != audit.KindToolCall || a.Tool != "bash" || a.Outcome != audit.OutcomeDenied || a.Decision.Layer != policy.LayerServer ||
		a.Decision.Match != "group:runtime" || a.UserID != "alice" || a.ThreadID != "t-9" || a.SessionKey != "t-9" || a.ChainID != id || a.NodeID != "agent" {
		t.Fatalf("audit %+v %+v", a, a.Decision)
	}
	var args map[string]string
	if json.Unmarshal(a.Args, &args) != nil || args["command"] != "touch canary" {
		t.Fatalf("args %s", a.Args)
	}
	// Another pool built without the governance is not governed: nothing
	// about it is global.
	other := newEngine(t, id, dsl)
	send(t, context.Background(), other, "go", nil, false)
	if _, err := os.Stat(filepath.Join(ws, "canary")); err != nil {
		t.Fatalf("without the server policy, bash was refused: %v", err)
	}
	if len(aud.Records()) != 1 {
		t.Fatal("an ungoverned chain wrote to the audit sink")
	}
}

func TestLimitEndsOnFailure(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Always(llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("test_add", `{"a":1,"b":1}`)},
		Usage: &llmtest.Usage{PromptTokens: 900, CompletionTokens: 200}}))
	id, dsl := agentChain(t, srv.URL, map[string]any{"tools": []any{map[string]any{"type": "builtin", "name": "test_add"}},
		"repeatLimit": -1, "limits": map[string]any{"tokensPerRun": 1000}})
	r := send(t, context.Background(), newEngine(t, id, dsl), "add", nil, true)
	end := oneTerminal(t, r, types.Failure)
	if end.msg.Metadata.GetValue("errorCode") != "limit_exceeded" || end.msg.Metadata.GetValue("errorLimit") != "tokensPerRun" ||
		!strings.Contains(end.err.Error(), "limits.tokensPerRun") {
		t.Fatalf("failure %v %v", end.err, end.msg.Metadata.Values())
	}
	evs := r.rec.Events()
	if last := evs[len(evs)-1]; last.Type != events.RunError || last.Code != "limit_exceeded" {
		t.Fatalf("last event %+v", last)
	}
	checkEvents(t, &r.rec)
}
