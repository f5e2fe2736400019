package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// lastRecord is the last audit record a kept.
func lastRecord(t *testing.T, a *audit.Recorder) audit.Record {
	t.Helper()
	recs := a.Records()
	if len(recs) == 0 {
		t.Fatal("no audit record")
	}
	return recs[len(recs)-1]
}

// counted is a tool that counts its calls: a refused call must not run.
func counted(name string, n *atomic.Int64) Tool {
	return Func{Spec: Info{Name: name, Description: name}, Fn: func(context.Context, json.RawMessage) (Result, error) {
		n.Add(1)
		return TextResult(name + " ran"), nil
	}}
}

// kindSet builds a set whose entries have the given kinds.
func kindSet(t *testing.T, tools map[string]Tool, kinds map[string]string, order ...string) *Set {
	t.Helper()
	list := make([]Tool, len(order))
	for i, name := range order {
		list[i] = tools[name]
	}
	return setWith(t, func(tl Tool) Spec { return Spec{Type: kinds[tl.Info().Name]} }, list...)
}

func restrictions(t *testing.T, layer, js string) *policy.Restrictions {
	t.Helper()
	p, err := policy.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return (*policy.Restrictions)(nil).With(layer, p)
}

func TestOfferedLeavesDeniedToolsOut(t *testing.T) {
	var n atomic.Int64
	set := kindSet(t, map[string]Tool{"read": counted("read", &n), "bash": counted("bash", &n), "gh__issues": counted("gh__issues", &n)},
		map[string]string{"read": TypeBuiltin, "bash": TypeBuiltin, "gh__issues": TypeMCP}, "read", "bash", "gh__issues")
	cases := []struct {
		policy string
		names  []string
	}{
		{``, []string{"read", "bash", "gh__issues"}},
		{`{"deny":["group:runtime"]}`, []string{"read", "gh__issues"}},
		{`{"profile":"readonly","alsoAllow":["group:mcp:gh"]}`, []string{"read", "gh__issues"}},
		{`{"allow":["gh__*"]}`, []string{"gh__issues"}},
		{`{"allow":[]}`, nil},
	}
	for _, c := range cases {
		r := &Run{Sink: events.Discard}
		if c.policy != "" {
			r.Policy = restrictions(t, policy.LayerServer, c.policy)
		}
		js, names := set.Offered(r)
		if !slices.Equal(names, c.names) {
			t.Fatalf("%s: offered %v, want %v", c.policy, names, c.names)
		}
		if len(c.names) == 0 {
			if js != nil {
				t.Fatalf("%s: tools array %s for no tools", c.policy, js)
			}
			continue
		}
		var arr []struct {
			Function struct{ Name string } `json:"function"`
		}
		if err := json.Unmarshal(js, &arr); err != nil {
			t.Fatalf("%s: %s: %v", c.policy, js, err)
		}
		var got []string
		for _, f := range arr {
			got = append(got, f.Function.Name)
		}
		if !slices.Equal(got, c.names) {
			t.Fatalf("%s: tools array names %v", c.policy, got)
		}
		if again, _ := set.Offered(r); &again[0] != &js[0] {
			t.Fatalf("%s: the offer was encoded again for an unchanged set", c.policy)
		}
	}
}

func TestOfferedFollowsRefresh(t *testing.T) {
	reg := NewRegistry()
	gp := &groupProvider{}
	specs, _ := ParseSpecs(json.RawMessage(`[{"type":"mcp","name":"srv","config":{"server":"x"}},{"type":"mcp","name":"other","config":{"server":"y"}}]`))
	set, err := Build(context.Background(), specs, BuildEnv{Registry: reg, Providers: map[string]Provider{TypeMCP: gp}})
	if err != nil {
		t.Fatal(err)
	}
	// The provider keeps the last spec's refresh: the "other" server's.
	r := &Run{Sink: events.Discard, Policy: restrictions(t, policy.LayerServer, `{"deny":["group:mcp:other","srv__b"]}`)}
	if _, names := set.Offered(r); !slices.Equal(names, []string{"srv__a"}) {
		t.Fatalf("before: %v", names)
	}
	// The server announces new tools: the denied ones stay out.
	if err := gp.refresh([]Tool{named("other__a"), named("other__new")}); err != nil {
		t.Fatal(err)
	}
	if _, names := set.Offered(r); !slices.Equal(names, []string{"srv__a"}) {
		t.Fatalf("after refresh: %v", names)
	}
	out := set.Invoke(context.Background(), r, Call{ID: "c1", Name: "other__new", Args: json.RawMessage(`{}`)})
	var den *policy.Denial
	if !errors.As(out.Err, &den) || den.Match != "group:mcp:other" {
		t.Fatalf("call of a refreshed denied tool: %v", out.Err)
	}
}

func TestDeniedCallIsRefused(t *testing.T) {
	var n atomic.Int64
	set := kindSet(t, map[string]Tool{"read": counted("read", &n), "bash": counted("bash", &n)},
		map[string]string{"read": TypeBuiltin, "bash": TypeBuiltin}, "read", "bash")
	var rec events.Recorder
	aud := &audit.Recorder{}
	r := &Run{Sink: &rec, Audit: aud, Point: aspects.Point{RunID: "run-1", ThreadID: "t-1", ChainID: "c", NodeID: "agent", UserID: "u"},
		Policy: restrictions(t, policy.NodeLayer("c", "agent"), `{"deny":["group:runtime"]}`), SessionKey: "t-1"}
	before := testutil.ToFloat64(metrics.PolicyDenials.WithLabelValues(policy.RuleDeny))
	// The model calls bash although it was never offered (a remembered or
	// hallucinated name).
	out := set.Invoke(context.Background(), r, Call{ID: "c1", Name: "bash", Args: json.RawMessage(`{"command":"rm -rf /"}`)})
	var den *policy.Denial
	if !errors.Is(out.Err, ErrPolicyDenied) || !errors.As(out.Err, &den) || den.Rule != policy.RuleDeny || den.Match != "group:runtime" || den.Layer != "node c/agent" {
		t.Fatalf("refusal %v", out.Err)
	}
	if n.Load() != 0 {
		t.Fatal("the denied tool ran")
	}
	if out.Kind != "permission_denied" || !strings.Contains(out.Content, "(deny group:runtime)") {
		t.Fatalf("the model reads %q", out.Content)
	}
	if got := testutil.ToFloat64(metrics.PolicyDenials.WithLabelValues(policy.RuleDeny)); got != before+1 {
		t.Fatalf("denials %v -> %v", before, got)
	}
	res := rec.Events()[len(rec.Events())-1]
	if res.Type != events.ToolCallResult || !res.Meta.IsError || res.Meta.ErrorKind != "permission_denied" {
		t.Fatalf("result event %+v", res)
	}
	a := lastRecord(t, aud)
	if a.Kind != audit.KindToolCall || a.Outcome != audit.OutcomeDenied || a.Tool != "bash" || a.ToolType != TypeBuiltin ||
		a.Decision == nil || a.Decision.Effect != "deny" || a.Decision.Rule != "deny" || a.Decision.Match != "group:runtime" ||
		a.RunID != "run-1" || a.ThreadID != "t-1" || a.SessionKey != "t-1" || a.UserID != "u" || a.ChainID != "c" || a.NodeID != "agent" ||
		a.ErrorKind != "permission_denied" || string(a.Args) != `{"command":"rm -rf /"}` {
		t.Fatalf("audit %+v", a)
	}
	// An unknown name is not found, and the list it gives leaves the
	// denied tool out.
	out = set.Invoke(context.Background(), r, Call{ID: "c2", Name: "bash2", Args: json.RawMessage(`{}`)})
	if !errors.Is(out.Err, ErrNotFound) || !strings.Contains(out.Content, "[read]") || strings.Contains(out.Content, "bash ") {
		t.Fatalf("not found: %s", out.Content)
	}
	if a := lastRecord(t, aud); a.Decision != nil || a.Outcome != audit.OutcomeError || a.ErrorKind != "not_found" {
		t.Fatalf("audit of an unknown tool %+v", a)
	}
	// The allowed tool runs, and its record says by which rule.
	out = set.Invoke(context.Background(), r, Call{ID: "c3", Name: "read", Args: json.RawMessage(`{}`)})
	if out.IsError || n.Load() != 1 {
		t.Fatalf("read: %+v", out)
	}
	if a := lastRecord(t, aud); a.Outcome != audit.OutcomeOK || a.Decision.Effect != "allow" || a.Decision.Layer != "node c/agent" || a.Decision.Rule != policy.RuleDefault {
		t.Fatalf("audit of an allowed call %+v", a)
	}
}

func TestSessionHourlyLimit(t *testing.T) {
	var n atomic.Int64
	set := kindSet(t, map[string]Tool{"read": counted("read", &n)}, map[string]string{"read": TypeBuiltin}, "read")
	store := limits.NewMemory()
	aud := &audit.Recorder{}
	newRun := func() *Run {
		return &Run{Sink: events.Discard, Audit: aud, SessionCalls: SessionCalls{Store: store, Key: "s1", PerHour: 2}}
	}
	// Two runs of one session share the budget.
	for i, r := range []*Run{newRun(), newRun(), newRun()} {
		out := set.Invoke(context.Background(), r, Call{ID: "c", Name: "read", Args: json.RawMessage(`{}`)})
		if i < 2 {
			if out.IsError {
				t.Fatalf("call %d: %s", i, out.Content)
			}
			continue
		}
		var ex *limits.Exceeded
		if !errors.As(out.Err, &ex) || ex.Limit != limits.ToolCallsPerHour || ex.Max != 2 || ex.Used != 2 || out.Kind != "limit_exceeded" ||
			!strings.Contains(out.Content, "limits.toolCallsPerHour") {
			t.Fatalf("call %d: %v / %s", i, out.Err, out.Content)
		}
	}
	if n.Load() != 2 {
		t.Fatalf("the tool ran %d times", n.Load())
	}
	if a := lastRecord(t, aud); a.Outcome != audit.OutcomeLimit || a.Limit != limits.ToolCallsPerHour || a.Max != 2 || a.Used != 2 {
		t.Fatalf("audit %+v", a)
	}
	// Another session has its own budget.
	other := &Run{Sink: events.Discard, SessionCalls: SessionCalls{Store: store, Key: "s2", PerHour: 2}}
	if out := set.Invoke(context.Background(), other, Call{ID: "c", Name: "read", Args: json.RawMessage(`{}`)}); out.IsError {
		t.Fatalf("other session: %s", out.Content)
	}
}

func TestCallsInheritTheRunsRestrictions(t *testing.T) {
	var seen *policy.Restrictions
	probe := Func{Spec: Info{Name: "sub"}, Fn: func(ctx context.Context, _ json.RawMessage) (Result, error) {
		seen = policy.FromContext(ctx)
		return TextResult("ok"), nil
	}}
	set := kindSet(t, map[string]Tool{"sub": probe}, map[string]string{"sub": TypeAgent}, "sub")
	r := &Run{Sink: events.Discard, Policy: restrictions(t, policy.NodeLayer("a", "agent"), `{"subagentDeny":["bash"]}`)}
	set.Invoke(context.Background(), r, Call{ID: "c", Name: "sub", Args: json.RawMessage(`{}`)})
	if seen == nil || !slices.Equal(seen.Layers(), []string{"node a/agent", "node a/agent (subagentDeny)"}) {
		t.Fatalf("the call saw %v", seen.Layers())
	}
	if d := seen.Decide(policy.Tool{Name: "bash", Kind: policy.KindBuiltin}); d.Allowed() || d.Rule != policy.RuleSubagentDeny {
		t.Fatalf("inherited decision %+v", d)
	}
}

func TestAuditArgsAreScrubbed(t *testing.T) {
	set := testSet(t, adder())
	aud := &audit.Recorder{}
	r := &Run{Sink: events.Discard, Audit: aud, Scrubber: upper{}}
	set.Invoke(context.Background(), r, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2,"note":"SECRET"}`)})
	a := lastRecord(t, aud)
	if strings.Contains(string(a.Args), "SECRET") || !strings.Contains(string(a.Args), "[REDACTED]") || !json.Valid(a.Args) {
		t.Fatalf("args %s", a.Args)
	}
	if a.Outcome != audit.OutcomeOK || a.Decision == nil || a.Decision.Effect != "allow" || a.Decision.Layer != "" {
		t.Fatalf("record %+v", a)
	}
}

type prompting struct {
	Func
	text string
}

func (p prompting) SystemPrompt(context.Context) string { return p.text }

func TestSystemPromptOfDeniedToolsIsLeftOut(t *testing.T) {
	set := kindSet(t, map[string]Tool{
		"skill": prompting{Func: Func{Spec: Info{Name: "skill"}}, text: "Skills: deploy."},
		"read":  prompting{Func: Func{Spec: Info{Name: "read"}}, text: "Read files."},
	}, map[string]string{"skill": TypeBuiltin, "read": TypeBuiltin}, "skill", "read")
	r := &Run{Sink: events.Discard, Policy: restrictions(t, policy.LayerServer, `{"deny":["skill"]}`)}
	if got := set.SystemPromptFor(context.Background(), r); got != "Read files." {
		t.Fatalf("prompt %q", got)
	}
	if got := set.SystemPrompt(context.Background()); got != "Skills: deploy.\n\nRead files." {
		t.Fatalf("unrestricted prompt %q", got)
	}
}

// answering is an Approver that gives the same answer to every request.
type answering struct{ d ApprovalDecision }

func (a answering) Approve(context.Context, ApprovalRequest) (ApprovalDecision, error) {
	return a.d, nil
}

func TestAuditRecordsApprovals(t *testing.T) {
	set := testSet(t, adder())
	cases := []struct {
		name     string
		approver Approver
		rule     string
		effect   string
		outcome  string
		args     string
	}{
		{"approved", answering{ApprovalDecision{Approved: true}}, "approve", "allow", audit.OutcomeOK, `{"a":1,"b":2}`},
		{"edited", answering{ApprovalDecision{Approved: true, Args: json.RawMessage(`{"a":40,"b":2}`)}}, "edit", "allow", audit.OutcomeOK, `{"a":40,"b":2}`},
		{"denied with a reason", answering{ApprovalDecision{Reason: "not with key SECRET"}}, "deny", "deny", audit.OutcomeDenied, `{"a":1,"b":2}`},
		{"nobody to ask", nil, "unavailable", "deny", audit.OutcomeDenied, `{"a":1,"b":2}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			aud := &audit.Recorder{}
			r := &Run{Sink: events.Discard, Audit: aud, Scrubber: upper{}, Approval: &ApprovalPolicy{Tools: []string{"add"}}}
			ctx := context.Background()
			if c.approver != nil {
				ctx = WithApprover(ctx, c.approver)
			}
			set.Invoke(ctx, r, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
			a := lastRecord(t, aud)
			if a.Approval == nil || a.Approval.Layer != audit.LayerPerson || a.Approval.Rule != c.rule || a.Approval.Effect != c.effect ||
				a.Outcome != c.outcome || string(a.Args) != c.args || strings.Contains(a.Approval.Reason, "SECRET") {
				t.Fatalf("record %+v, approval %+v", a, a.Approval)
			}
			if c.rule == "deny" && a.Approval.Reason != "not with key [REDACTED]" {
				t.Fatalf("reason %q", a.Approval.Reason)
			}
			if a.Decision == nil || a.Decision.Effect != "allow" {
				t.Fatalf("the policy's decision %+v", a.Decision)
			}
		})
	}
	// A call that needs no approval has none in its record.
	aud := &audit.Recorder{}
	set.Invoke(context.Background(), &Run{Sink: events.Discard, Audit: aud}, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
	if a := lastRecord(t, aud); a.Approval != nil {
		t.Fatalf("approval %+v", a.Approval)
	}
}

// TestAuditToolNamesAreScrubbed: the tool name and call id are the
// model's words, like the arguments: a secret in them is redacted in the
// audit log, for a known tool and an unknown one.
func TestAuditToolNamesAreScrubbed(t *testing.T) {
	set := testSet(t, adder())
	aud := &audit.Recorder{}
	r := &Run{Sink: events.Discard, Audit: aud, Scrubber: upper{}}
	for _, name := range []string{"add", "leak-SECRET-via-name"} {
		set.Invoke(context.Background(), r, Call{ID: "id-SECRET", Name: name, Args: json.RawMessage(`{"a":1,"b":2}`)})
		a := lastRecord(t, aud)
		if strings.Contains(a.Tool, "SECRET") || strings.Contains(a.ToolCallID, "SECRET") || strings.Contains(a.Error, "SECRET") {
			t.Fatalf("a secret in the model's tool name or call id reached the audit log: %+v", a)
		}
		if name == "add" && a.Tool != "add" {
			t.Fatalf("a plain tool name changed: %q", a.Tool)
		}
	}
}

// shellish is a tool whose calls carry a command, as bash's do.
type shellish struct{ Func }

func (shellish) MatchCommands(args json.RawMessage, _ CommandSelection) ShellCall {
	var a struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(args, &a)
	return ShellCall{Commands: []string{a.Command}}
}

// TestAuditApprovedCommandsAreScrubbed: the commands a person judged are
// the model's words; the audit log keeps them scrubbed.
func TestAuditApprovedCommandsAreScrubbed(t *testing.T) {
	sh := shellish{Func{Spec: Info{Name: "sh", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		Fn: func(context.Context, json.RawMessage) (Result, error) { return TextResult("ok"), nil }}}
	set := testSet(t, sh)
	aud := &audit.Recorder{}
	r := &Run{Sink: events.Discard, Audit: aud, Scrubber: upper{}, Approval: &ApprovalPolicy{Tools: []string{"sh"}}}
	ctx := WithApprover(context.Background(), answering{ApprovalDecision{Approved: true}})
	set.Invoke(ctx, r, Call{ID: "c", Name: "sh", Args: json.RawMessage(`{"command":"curl -H 'token: SECRET' x"}`)})
	a := lastRecord(t, aud)
	if a.Approval == nil || len(a.Approval.Commands) != 1 || strings.Contains(a.Approval.Commands[0], "SECRET") {
		t.Fatalf("approval %+v", a.Approval)
	}
}
