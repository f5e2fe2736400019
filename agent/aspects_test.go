package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// spy implements every point, records the order of calls and applies the
// rewrites it is told to.
type spy struct {
	aspects.Everywhere
	order int
	mu    sync.Mutex
	calls []string

	rewriteMessages bool
	rewriteAnswer   string
	rewriteArgs     string
	rewriteResult   string
	rewriteOutput   string
	refuseAt        string
	shortCircuit    bool
	onlyTool        string
}

func (s *spy) Order() int { return s.order }

func (s *spy) PointCut(_ context.Context, p *aspects.Point) bool {
	return s.onlyTool == "" || p.Tool == "" || p.Tool == s.onlyTool
}

func (s *spy) note(point string) error {
	s.mu.Lock()
	s.calls = append(s.calls, point)
	s.mu.Unlock()
	if s.refuseAt == point {
		return errors.New("refused at " + point)
	}
	return nil
}

func (s *spy) OnRunStart(_ context.Context, p *aspects.Point, _ *aspects.RunInput) error {
	if p.RunID == "" || p.ThreadID == "" {
		return errors.New("point without run identity")
	}
	return s.note("start")
}
func (s *spy) Before(_ context.Context, _ *aspects.Point, in *aspects.RunInput) error {
	in.SystemPrompt += " Before was here."
	return s.note("before")
}
func (s *spy) Around(ctx context.Context, _ *aspects.Point, in *aspects.RunInput, next aspects.RunFunc) (*aspects.RunOutput, error) {
	if err := s.note("around"); err != nil {
		return nil, err
	}
	if s.shortCircuit {
		return &aspects.RunOutput{Content: "answered from cache"}, nil
	}
	return next(ctx, in)
}
func (s *spy) After(_ context.Context, _ *aspects.Point, out *aspects.RunOutput) error {
	if s.rewriteOutput != "" {
		out.Content = s.rewriteOutput
	}
	return s.note("after")
}
func (s *spy) OnCompleted(context.Context, *aspects.Point, *aspects.RunOutput, error) {
	_ = s.note("completed")
}
func (s *spy) BeforeLLM(_ context.Context, _ *aspects.Point, req *aspects.LLMRequest) error {
	if s.rewriteMessages {
		req.Messages = append(slices.Clone(req.Messages), events.Message{Role: events.RoleUser, Content: "injected by BeforeLLM"})
	}
	return s.note("beforeLLM")
}
func (s *spy) AfterLLM(_ context.Context, _ *aspects.Point, r *aspects.LLMResponse) error {
	if s.rewriteAnswer != "" && len(r.ToolCalls) == 0 {
		r.Content = s.rewriteAnswer
	}
	return s.note("afterLLM")
}
func (s *spy) OnChunk(context.Context, *aspects.Point, *aspects.Chunk) error { return s.note("chunk") }
func (s *spy) BeforeToolCall(_ context.Context, p *aspects.Point, c *aspects.ToolCall) error {
	if p.Tool != c.Name || p.RunID == "" {
		return errors.New("tool point without identity")
	}
	if s.rewriteArgs != "" {
		c.Args = json.RawMessage(s.rewriteArgs)
	}
	return s.note("toolBefore")
}
func (s *spy) AfterToolCall(_ context.Context, _ *aspects.Point, _ *aspects.ToolCall, r *aspects.ToolResult) error {
	if s.rewriteResult != "" {
		r.Content = s.rewriteResult
	}
	return s.note("toolAfter")
}

func (s *spy) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Compact(slices.Clone(s.calls))
}

func toolThenAnswer() llmtest.Script {
	return llmtest.Sequence(llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`)), llmtest.Reply("The answer is in."))
}

func TestEveryPointIsInvoked(t *testing.T) {
	s := &spy{}
	h := newHarness(t, toolThenAnswer())
	h.tools, h.as = []string{"add"}, []aspects.Aspect{s}
	if _, _, err := h.run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	want := []string{"start", "before", "around", "beforeLLM", "chunk", "afterLLM", "toolBefore", "toolAfter", "beforeLLM", "chunk", "afterLLM", "after", "completed"}
	if got := s.seen(); !slices.Equal(got, want) {
		t.Fatalf("points:\n got %v\nwant %v", got, want)
	}
	if sys := h.srv.Requests()[0].System(); !strings.HasSuffix(sys, "Before was here.") {
		t.Fatalf("Before rewrite ignored: %q", sys)
	}
}

func TestRewritesAreHonoured(t *testing.T) {
	s := &spy{rewriteMessages: true, rewriteArgs: `{"a":40,"b":2}`, rewriteResult: "result rewritten", rewriteAnswer: "answer rewritten", rewriteOutput: ""}
	h := newHarness(t, toolThenAnswer())
	h.tools, h.as = []string{"add"}, []aspects.Aspect{s}
	out, rec, err := h.run(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	reqs := h.srv.Requests()
	if last := reqs[0].Messages[len(reqs[0].Messages)-1]; last.Content != "injected by BeforeLLM" {
		t.Fatalf("BeforeLLM rewrite not sent: %+v", last)
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || res[0].Content != "result rewritten" {
		t.Fatalf("ToolCallAfter rewrite not sent back: %+v", res)
	}
	if out.Content != "answer rewritten" {
		t.Fatalf("AfterLLM rewrite ignored: %q", out.Content)
	}
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult && (!e.Meta.ArgsRewritten || e.Content != "result rewritten") {
			t.Fatalf("RESULT event %+v", e)
		}
	}
	// The tool saw the rewritten arguments: 40+2.
	h2 := newHarness(t, toolThenAnswer())
	var seen string
	h2.tools, h2.as = []string{"add"}, []aspects.Aspect{&spy{rewriteArgs: `{"a":40,"b":2}`}, resultSpy(&seen)}
	if _, _, err := h2.run(context.Background(), "x"); err != nil || seen != "42" {
		t.Fatalf("tool result %q, err %v", seen, err)
	}
	// After rewrites the run's output.
	h3 := newHarness(t, llmtest.Always(llmtest.Reply("original")))
	h3.as = []aspects.Aspect{&spy{rewriteOutput: "output rewritten"}}
	if out, _, err := h3.run(context.Background(), "x"); err != nil || out.Content != "output rewritten" {
		t.Fatalf("%v %v", out, err)
	}
}

type resultRecorder struct {
	aspects.Everywhere
	seen *string
}

func (resultRecorder) Order() int { return 99 }
func (r resultRecorder) AfterToolCall(_ context.Context, _ *aspects.Point, _ *aspects.ToolCall, res *aspects.ToolResult) error {
	*r.seen = res.Content
	return nil
}

func resultSpy(seen *string) aspects.Aspect { return resultRecorder{seen: seen} }

func TestRefusalsStopWhatTheyIntercept(t *testing.T) {
	for _, point := range []string{"start", "before", "around", "after", "beforeLLM", "afterLLM", "chunk"} {
		t.Run(point, func(t *testing.T) {
			h := newHarness(t, llmtest.Always(llmtest.Reply("hello")))
			h.as = []aspects.Aspect{&spy{refuseAt: point}}
			_, rec, err := h.run(context.Background(), "x")
			var re *RunError
			if !errors.As(err, &re) || re.Code != CodeRefused || !strings.Contains(err.Error(), "refused at "+point) {
				t.Fatalf("err %v", err)
			}
			if countType(rec, events.RunError) != 1 {
				t.Fatalf("events %v", rec.Types())
			}
		})
	}
	// A refused tool call is not run; the model reads the refusal.
	h := newHarness(t, toolThenAnswer())
	h.tools, h.as = []string{"add"}, []aspects.Aspect{&spy{refuseAt: "toolBefore"}}
	if _, _, err := h.run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if h.calls.get("add") != 0 || !strings.Contains(h.srv.Requests()[1].ToolResults()[0].Content, "refused at toolBefore") {
		t.Fatalf("add ran %d times; result %q", h.calls.get("add"), h.srv.Requests()[1].ToolResults()[0].Content)
	}
}

func TestAroundShortCircuitAndOrder(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Reply("from the model")))
	outer, inner := &spy{order: 1}, &spy{order: 2, shortCircuit: true}
	h.as = []aspects.Aspect{inner, outer}
	out, _, err := h.run(context.Background(), "x")
	if err != nil || out.Content != "answered from cache" || len(h.srv.Requests()) != 0 {
		t.Fatalf("%v %v, %d requests", out, err, len(h.srv.Requests()))
	}
	if !slices.Contains(outer.seen(), "around") || !slices.Contains(inner.seen(), "around") {
		t.Fatal("both Around aspects must run")
	}
}

func TestPointCutLimitsToolAspects(t *testing.T) {
	h := newHarness(t, toolThenAnswer())
	s := &spy{onlyTool: "other_tool", rewriteResult: "should not apply"}
	h.tools, h.as = []string{"add"}, []aspects.Aspect{s}
	if _, _, err := h.run(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(s.seen(), "toolBefore") || h.srv.Requests()[1].ToolResults()[0].Content != "3" {
		t.Fatalf("PointCut ignored: %v", s.seen())
	}
}

type panicky struct{ aspects.Everywhere }

func (panicky) Order() int { return 1 }
func (panicky) AfterLLM(context.Context, *aspects.Point, *aspects.LLMResponse) error {
	panic("aspect bug")
}

func TestPanicBecomesRunError(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Reply("x")))
	h.as = []aspects.Aspect{panicky{}}
	_, rec, err := h.run(context.Background(), "x")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodePanic || countType(rec, events.RunError) != 1 {
		t.Fatalf("err %v, events %v", err, rec.Types())
	}
}

// timing is an Around aspect that wraps whatever the run returns (%w).
type timing struct{ aspects.Everywhere }

func (timing) Order() int { return 1 }
func (timing) Around(ctx context.Context, _ *aspects.Point, in *aspects.RunInput, next aspects.RunFunc) (*aspects.RunOutput, error) {
	out, err := next(ctx, in)
	if err != nil {
		return out, fmt.Errorf("timed run: %w", err)
	}
	return out, nil
}

// An LLM's 400 passed on by an Around aspect that wraps it stays an LLM
// error: it is not the aspect's refusal.
func TestAroundWrappedLLMErrorStaysLLMError(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Response{Status: 400, ErrorMessage: "bad request"}))
	h.as = []aspects.Aspect{timing{}}
	_, rec, err := h.run(context.Background(), "x")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodeLLM {
		t.Fatalf("err %v (code %v), want %s", err, re, CodeLLM)
	}
	if evs := rec.Events(); evs[len(evs)-1].Code != CodeLLM {
		t.Fatalf("RUN_ERROR code %q", evs[len(evs)-1].Code)
	}
}

// witness records what the Completed point saw.
type witness struct {
	aspects.Everywhere
	calls int
	err   error
}

func (*witness) Order() int { return 50 }
func (w *witness) OnCompleted(_ context.Context, _ *aspects.Point, _ *aspects.RunOutput, err error) {
	w.calls++
	w.err = err
}

// Completed always runs last, a panicking run included.
func TestCompletedRunsAfterPanic(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Reply("x")))
	w := &witness{}
	h.as = []aspects.Aspect{panicky{}, w}
	_, rec, err := h.run(context.Background(), "x")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodeInternal || countType(rec, events.RunError) != 1 {
		t.Fatalf("err %v, events %v", err, rec.Types())
	}
	if w.calls != 1 || !errors.As(w.err, &re) || re.Code != CodeInternal {
		t.Fatalf("Completed ran %d times with %v", w.calls, w.err)
	}
}

type hollow struct{ aspects.Everywhere }

func (hollow) Order() int { return 1 }
func (hollow) Around(context.Context, *aspects.Point, *aspects.RunInput, aspects.RunFunc) (*aspects.RunOutput, error) {
	return nil, nil
}

// An Around aspect that returns neither an output nor an error is the
// aspect's fault (aspect_error), not the LLM's.
func TestAroundWithoutOutputIsAspectError(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Reply("x")))
	h.as = []aspects.Aspect{hollow{}}
	_, rec, err := h.run(context.Background(), "x")
	var re *RunError
	if !errors.As(err, &re) || re.Code != CodeAspect {
		t.Fatalf("err %v", err)
	}
	if evs := rec.Events(); evs[len(evs)-1].Code != CodeAspect {
		t.Fatalf("RUN_ERROR %+v", evs[len(evs)-1])
	}
}

// classify gives a failure that is not the LLM's a code of its own.
func TestClassifyNonLLMFailures(t *testing.T) {
	r := &run{agent: &Agent{cfg: Config{Timeout: time.Minute}}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	timedOut, cancel2 := context.WithTimeoutCause(context.Background(), 0, errRunTimeout)
	defer cancel2()
	<-timedOut.Done()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		code string
	}{
		{context.Background(), errors.New("something broke"), CodeInternal},
		{context.Background(), &LLMError{URL: "u", Model: "m", Status: 400, Err: errors.New("bad")}, CodeLLM},
		{context.Background(), fmt.Errorf("%w: no", aspects.ErrRefused), CodeRefused},
		{context.Background(), &RunError{Code: CodeSession, Err: errors.New("store down")}, CodeSession},
		{cancelled, errors.New("stopped"), CodeCancelled},
		{timedOut, errors.New("stopped"), CodeTimeout},
	} {
		var re *RunError
		if err := r.classify(c.ctx, c.err); !errors.As(err, &re) || re.Code != c.code {
			t.Errorf("%v: code %v, want %s", c.err, re, c.code)
		}
	}
}
