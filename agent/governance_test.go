package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/audit"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/tools/limits"
	"github.com/ruleagent/ruleagent/tools/policy"
)

// runOn runs one conversation on a, in thread (empty: none), checking the
// event stream.
func runOn(t *testing.T, a *Agent, thread, text string) (*Output, *events.Recorder, error) {
	t.Helper()
	var rec events.Recorder
	out, err := a.Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: text}},
		SystemPrompt: "You are a test agent.", ThreadID: thread, Point: aspects.Point{ChainID: "c", NodeID: "agent"}, Stream: true}, &rec)
	checkStream(t, &rec)
	return out, &rec, err
}

// wantLimit asserts a run ended on the given limit, with RUN_ERROR naming it.
func wantLimit(t *testing.T, err error, rec *events.Recorder, limit string) {
	t.Helper()
	var re *RunError
	var ex *limits.Exceeded
	if !errors.As(err, &re) || re.Code != CodeLimit || re.Limit != limit || !errors.As(err, &ex) || ex.Limit != limit {
		t.Fatalf("error %v, want the %s limit", err, limit)
	}
	last := rec.Events()[len(rec.Events())-1]
	if last.Type != events.RunError || last.Code != CodeLimit || !strings.Contains(last.Message, "limits."+limit) {
		t.Fatalf("terminal event %+v", last)
	}
}

func TestTokensPerRun(t *testing.T) {
	usage := &llmtest.Usage{PromptTokens: 500, CompletionTokens: 100}
	h := newHarness(t, llmtest.Always(llmtest.Response{ToolCalls: []llmtest.ToolCall{llmtest.Call("add", `{"a":1,"b":2}`)}, Usage: usage}))
	h.tools = []string{"add"}
	aud := &audit.Recorder{}
	h.cfg.Audit, h.cfg.RepeatLimit, h.cfg.Limits = aud, -1, Limits{TokensPerRun: 1000}
	before := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(limits.TokensPerRun))
	_, rec, err := runOn(t, h.agent(), "", "add forever")
	wantLimit(t, err, rec, limits.TokensPerRun)
	// 600 tokens after one turn is under budget; 1200 after two is not:
	// the third turn is never asked for.
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("%d LLM requests", n)
	}
	if got := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(limits.TokensPerRun)); got != before+1 {
		t.Fatalf("limit hits %v -> %v", before, got)
	}
	recs := aud.Records(audit.KindLimit)
	if len(recs) != 1 || recs[0].Limit != limits.TokensPerRun || recs[0].Max != 1000 || recs[0].Used != 1200 || recs[0].Outcome != audit.OutcomeLimit ||
		recs[0].ChainID != "c" || recs[0].NodeID != "agent" || recs[0].RunID == "" {
		t.Fatalf("audit %+v", recs)
	}
	if calls := aud.Records(audit.KindToolCall); len(calls) != 2 || calls[0].Outcome != audit.OutcomeOK {
		t.Fatalf("tool call records %+v", calls)
	}
}

func TestTokensPerSession(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Response{Text: "ok", Usage: &llmtest.Usage{PromptTokens: 500, CompletionTokens: 100}}))
	h.cfg.Limits = Limits{TokensPerSession: 1000}
	a := h.agent()
	for i, want := range []string{"", "", limits.TokensPerSession} {
		_, rec, err := runOn(t, a, "thread-1", "hi")
		if want == "" {
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			continue
		}
		wantLimit(t, err, rec, want)
	}
	// The refused run asked the LLM nothing.
	if n := len(h.srv.Requests()); n != 2 {
		t.Fatalf("%d LLM requests", n)
	}
	// Another thread is another session; so is another agent (node).
	if _, _, err := runOn(t, a, "thread-2", "hi"); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentRuns(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	h := newHarness(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if r.LastUserText() == "hold" {
			entered <- struct{}{}
			<-release
		}
		return llmtest.Reply("done")
	}))
	// Registered after the server's cleanup, so it runs first: a failing
	// test does not leave the held request blocking the server's Close.
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	aud := &audit.Recorder{}
	h.cfg.Audit, h.cfg.Limits = aud, Limits{ConcurrentRuns: 1}
	a := h.agent()
	first := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "hold"}}}, events.Discard)
		first <- err
	}()
	<-entered
	_, rec, err := runOn(t, a, "", "second")
	wantLimit(t, err, rec, limits.ConcurrentRuns)
	if types := rec.Types(); !slices.Equal(types, []events.Type{events.RunStarted, events.RunError}) {
		t.Fatalf("events %v", types)
	}
	free()
	if err := <-first; err != nil {
		t.Fatalf("the first run: %v", err)
	}
	// The slot is free again.
	if _, _, err := runOn(t, a, "", "third"); err != nil {
		t.Fatal(err)
	}
	if recs := aud.Records(audit.KindLimit); len(recs) != 1 || recs[0].Limit != limits.ConcurrentRuns || recs[0].Max != 1 || recs[0].Used != 1 {
		t.Fatalf("audit %+v", recs)
	}
}

func TestTimeoutIsALimit(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Response{Hang: true}))
	aud := &audit.Recorder{}
	h.cfg.Audit, h.cfg.Timeout = aud, 50*time.Millisecond
	before := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(limits.Timeout))
	_, _, err := runOn(t, h.agent(), "", "hi")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodeTimeout || re.Limit != limits.Timeout {
		t.Fatalf("error %v", err)
	}
	if got := testutil.ToFloat64(metrics.LimitHits.WithLabelValues(limits.Timeout)); got != before+1 {
		t.Fatalf("limit hits %v -> %v", before, got)
	}
	if recs := aud.Records(audit.KindLimit); len(recs) != 1 || recs[0].Limit != limits.Timeout || recs[0].Max != 50 {
		t.Fatalf("audit %+v", recs)
	}
}

func TestPolicyShapesTheRequest(t *testing.T) {
	h := newHarness(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("slow", `{}`)), // never offered, called anyway
		llmtest.Reply("done"),
	))
	h.tools = []string{"add", "slow"}
	var names [][]string
	h.as = []aspects.Aspect{beforeLLM(func(req *aspects.LLMRequest) { names = append(names, slices.Clone(req.ToolNames)) })}
	p, err := policy.Parse([]byte(`{"deny":["slow"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var rec events.Recorder
	_, err = h.agent().Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "go"}},
		Policy: (*policy.Restrictions)(nil).With(policy.LayerServer, p), Stream: true}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, req := range h.srv.Requests() {
		if got := req.ToolNames(); !slices.Equal(got, []string{"add"}) {
			t.Fatalf("request %d offers %v", i, got)
		}
	}
	if len(names) != 2 || !slices.Equal(names[0], []string{"add"}) {
		t.Fatalf("aspects saw %v", names)
	}
	if h.calls.get("slow") != 0 {
		t.Fatal("the denied tool ran")
	}
	res := h.srv.Requests()[1].ToolResults()
	if len(res) != 1 || !strings.Contains(res[0].Content, "Error (permission_denied)") || !strings.Contains(res[0].Content, "slow is denied by the server's tool policy") {
		t.Fatalf("the model read %+v", res)
	}
}

// beforeLLM is an aspect that looks at each LLM request.
type beforeLLM func(*aspects.LLMRequest)

func (beforeLLM) Order() int                                    { return 0 }
func (beforeLLM) PointCut(context.Context, *aspects.Point) bool { return true }
func (f beforeLLM) BeforeLLM(_ context.Context, _ *aspects.Point, r *aspects.LLMRequest) error {
	f(r)
	return nil
}
