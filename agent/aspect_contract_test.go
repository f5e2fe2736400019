package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// The aspect contract: for every point, what a refusal (an error) and a
// rewrite there do, streaming and not. The README's table is rendered from
// contractTable (TestAspectContractREADME), and TestAspectContract runs
// every cell: point × {streaming, not streaming} × {refuse, rewrite, pass}.

// effect is one cell: the README's words and the check that holds them.
type effect struct {
	text  string
	check func(t *testing.T, c *contractRun)
}

type contractRow struct {
	point  string // the actor's name for it
	name   string // the README's
	method string
	// refusal and rewrite per mode: [0] streaming, [1] not streaming.
	refusal [2]effect
	rewrite [2]effect
}

func both(e effect) [2]effect { return [2]effect{e, e} }

// The run every cell starts from: a turn that reasons, says a sentence and
// calls add, and a final answer.
const (
	contractAnswer = "The sum is 3."
	contractSecret = "sk-contract-secret"
)

func contractScript() llmtest.Script {
	return llmtest.Sequence(
		llmtest.Response{Reasoning: "Adding.", Text: "Let me add.", ToolCalls: []llmtest.ToolCall{llmtest.Call("add", `{"a":1,"b":2}`)}, ChunkSize: 4},
		llmtest.Response{Text: contractAnswer, ChunkSize: 4},
	)
}

var (
	failsRun = effect{"fails the run (`aspect_refused`) before the LLM is called", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if n := len(c.srv.Requests()); n != 0 {
			t.Errorf("%d LLM requests after a refusal before the run", n)
		}
	}}
	failsAfter = effect{"fails the run (`aspect_refused`); text already sent stays as sent", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if !c.textSent(contractAnswer) {
			t.Errorf("the answer was not streamed before the refusal: %v", c.texts())
		}
	}}
	failsTurn = effect{"fails the run (`aspect_refused`) before this request is sent", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if n := len(c.srv.Requests()); n != 0 {
			t.Errorf("%d requests sent", n)
		}
	}}
	failsAnswer = effect{"fails the run (`aspect_refused`); the answer's deltas were streamed already", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if !strings.Contains(c.allText(), "Let me") {
			t.Errorf("the turn was not streamed")
		}
	}}
	failsAnswerUnsent = effect{"fails the run (`aspect_refused`); nothing of the answer was sent", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if strings.Contains(c.allText(), "Let me") {
			t.Errorf("text of the refused answer reached the client")
		}
	}}
	chunkStreaming = effect{"fails the run (`aspect_refused`, not retried); the refused delta and all after it never reach the client", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if c.eventsContain("sum") {
			t.Errorf("the refused delta reached the client")
		}
		if !strings.Contains(c.allText(), "Let me") {
			t.Errorf("deltas before the refused one did not stream")
		}
		if n := len(c.srv.Requests()); n != 2 {
			t.Errorf("%d requests: a refused chunk must not be retried", n)
		}
	}}
	chunkWhole = effect{"fails the run (`aspect_refused`); the refused text never reaches the client", func(t *testing.T, c *contractRun) {
		c.refused(t)
		if c.eventsContain("sum") {
			t.Errorf("the refused text reached the client")
		}
	}}
	toolRefusal = effect{"the call does not run; the model reads the refusal as its result, and the run goes on", func(t *testing.T, c *contractRun) {
		c.succeeded(t, contractAnswer)
		if c.calls.get("add") != 0 {
			t.Errorf("add ran")
		}
		if r := c.modelRead(t); !strings.Contains(r, "refused by the test") {
			t.Errorf("the model read %q", r)
		}
	}}
	toolAfterRefusal = effect{"the result becomes an error result carrying the refusal, which the model reads; the run goes on", func(t *testing.T, c *contractRun) {
		c.succeeded(t, contractAnswer)
		if r := c.modelRead(t); !strings.HasPrefix(r, "Error (") || !strings.Contains(r, "refused by the test") {
			t.Errorf("the model read %q", r)
		}
		if e := c.result(t); !e.Meta.IsError || e.Content != c.modelRead(t) {
			t.Errorf("result event %+v", e)
		}
	}}
	cannotRefuse = effect{"cannot refuse: it returns nothing, and a panic there is recovered; the run's outcome stands", func(t *testing.T, c *contractRun) {
		c.succeeded(t, contractAnswer)
	}}
)

var contractTable = []contractRow{
	{point: "start", name: "run start", method: "OnRunStart(ctx, point, *RunInput) error",
		refusal: both(failsRun),
		rewrite: both(effect{"the messages and system prompt the run starts from", systemRewritten("start")})},
	{point: "before", name: "before", method: "Before(ctx, point, *RunInput) error",
		refusal: both(failsRun),
		rewrite: both(effect{"the messages and system prompt the run starts from", systemRewritten("before")})},
	{point: "around", name: "around", method: "Around(ctx, point, *RunInput, next) (*RunOutput, error)",
		refusal: both(effect{"an error of its own (not one of `next`'s, even wrapped) fails the run (`aspect_refused`)", func(t *testing.T, c *contractRun) {
			c.refused(t)
		}}),
		rewrite: both(effect{"answering without calling `next`: its answer is the run's, sent as a text message; no LLM is called", func(t *testing.T, c *contractRun) {
			c.succeeded(t, "from around")
			if len(c.srv.Requests()) != 0 || !c.textSent("from around") {
				t.Errorf("%d requests; text sent: %v", len(c.srv.Requests()), c.texts())
			}
		}})},
	{point: "after", name: "after", method: "After(ctx, point, *RunOutput) error",
		refusal: both(failsAfter),
		rewrite: both(effect{"the run's answer (the node's output, `RUN_FINISHED`'s `result`); text already sent stays as sent", func(t *testing.T, c *contractRun) {
			c.succeeded(t, "from after")
			if !c.textSent(contractAnswer) {
				t.Errorf("texts %v", c.texts())
			}
		}})},
	{point: "completed", name: "completed", method: "OnCompleted(ctx, point, *RunOutput, error)",
		refusal: both(cannotRefuse),
		rewrite: both(effect{"none: it observes a copy, last, after any other point and after a panic", func(t *testing.T, c *contractRun) {
			c.succeeded(t, contractAnswer)
		}})},
	{point: "beforeLLM", name: "before LLM", method: "BeforeLLM(ctx, point, *LLMRequest) error",
		refusal: both(failsTurn),
		rewrite: both(effect{"the messages sent; `ToolNames` narrows the tools offered, and a call of a tool withdrawn so is refused (names not offered are ignored: an aspect cannot grant a tool)", beforeLLMRewritten})},
	{point: "afterLLM", name: "after LLM", method: "AfterLLM(ctx, point, *LLMResponse) error",
		refusal: [2]effect{failsAnswer, failsAnswerUnsent},
		rewrite: [2]effect{
			{"the answer, the tool calls run, `Model` and `Usage` (the run's usage and metrics); deltas already streamed stay as sent", afterLLMRewritten(true)},
			{"the answer, the tool calls run, `Model` and `Usage` (the run's usage and metrics); the text message and calls sent are the rewritten ones", afterLLMRewritten(false)},
		}},
	{point: "chunk", name: "stream chunk", method: "OnChunk(ctx, point, *Chunk) error",
		refusal: [2]effect{chunkStreaming, chunkWhole},
		rewrite: [2]effect{
			{"each text, reasoning or argument delta before it is sent: `Delta` is what the client sees and the answer keeps (`\"\"` drops it)", chunkRewritten},
			{"the whole text, reasoning and each call's arguments, once the answer is in and before after LLM: `Delta` is what the client sees and the answer keeps", chunkRewritten},
		}},
	{point: "toolBefore", name: "tool call before", method: "BeforeToolCall(ctx, point, *ToolCall) error",
		refusal: both(toolRefusal),
		rewrite: both(effect{"the arguments the tool runs with, validated again (`argsRewritten`); arguments a person edits at an approval pass here again", func(t *testing.T, c *contractRun) {
			c.succeeded(t, contractAnswer)
			if e := c.result(t); e.Content != "42" || !e.Meta.ArgsRewritten {
				t.Errorf("result %+v", e)
			}
		}})},
	{point: "toolAfter", name: "tool call after", method: "AfterToolCall(ctx, point, *ToolCall, *ToolResult) error",
		refusal: both(toolAfterRefusal),
		rewrite: both(effect{"the result the model reads and the client sees, scrubbed of secrets and truncated like any result", func(t *testing.T, c *contractRun) {
			c.succeeded(t, contractAnswer)
			e := c.result(t)
			if e.Content != c.modelRead(t) || strings.Contains(e.Content, contractSecret) || !strings.HasPrefix(e.Content, "rewritten") || !e.Meta.Truncated {
				t.Errorf("result event %+v; the model read %q", e, c.modelRead(t))
			}
		}})},
}

func systemRewritten(point string) func(t *testing.T, c *contractRun) {
	return func(t *testing.T, c *contractRun) {
		c.succeeded(t, contractAnswer)
		if sys := c.srv.Requests()[0].System(); !strings.Contains(sys, "[rewritten at "+point+"]") {
			t.Errorf("system prompt %q", sys)
		}
	}
}

func beforeLLMRewritten(t *testing.T, c *contractRun) {
	c.succeeded(t, contractAnswer)
	first := c.srv.Requests()[0]
	if last := first.Messages[len(first.Messages)-1]; last.Content != "injected" || len(first.Tools) != 0 {
		t.Errorf("first request: last message %+v, %d tools", last, len(first.Tools))
	}
	if c.calls.get("add") != 0 || !strings.Contains(c.modelRead(t), "not offered") {
		t.Errorf("a withdrawn tool ran (%d) or the model read %q", c.calls.get("add"), c.modelRead(t))
	}
}

func afterLLMRewritten(streaming bool) func(t *testing.T, c *contractRun) {
	return func(t *testing.T, c *contractRun) {
		c.succeeded(t, "from afterLLM")
		if e := c.result(t); e.Content != "42" {
			t.Errorf("the rewritten call did not run: %+v", e)
		}
		if c.out.Model != "rewritten-model" || c.out.Usage.TotalTokens != 24 {
			t.Errorf("model %q, usage %+v", c.out.Model, c.out.Usage)
		}
		fin := c.rec.Events()[len(c.rec.Events())-1]
		if len(fin.Usage) != 1 || fin.Usage[0].Model != "rewritten-model" || fin.Usage[0].TotalTokens != 24 {
			t.Errorf("RUN_FINISHED usage %+v", fin.Usage)
		}
		if streaming != c.textSent(contractAnswer) || streaming == c.textSent("from afterLLM") {
			t.Errorf("streaming=%v, texts sent %v", streaming, c.texts())
		}
	}
}

func chunkRewritten(t *testing.T, c *contractRun) {
	c.succeeded(t, strings.ToUpper(contractAnswer))
	if !c.textSent(strings.ToUpper(contractAnswer)) || c.eventsContain("sum") {
		t.Errorf("texts sent %v", c.texts())
	}
	second := c.srv.Requests()[1]
	for _, m := range second.Messages {
		if m.Role == "assistant" && m.Content != "LET ME ADD." {
			t.Errorf("the conversation keeps %q", m.Content)
		}
	}
}

// actor does its action at its point and passes everywhere else.
type actor struct {
	aspects.Everywhere
	point, action string
	mu            sync.Mutex
	seen          []string
}

func (a *actor) Order() int { return 10 }

// at records the point and says whether the action applies there.
func (a *actor) at(point string) bool {
	a.mu.Lock()
	a.seen = append(a.seen, point)
	a.mu.Unlock()
	return a.point == point
}

func (a *actor) refusal() error { return errors.New("refused by the test at " + a.point) }

func (a *actor) OnRunStart(_ context.Context, _ *aspects.Point, in *aspects.RunInput) error {
	return a.input("start", in)
}

func (a *actor) Before(_ context.Context, _ *aspects.Point, in *aspects.RunInput) error {
	return a.input("before", in)
}

func (a *actor) input(point string, in *aspects.RunInput) error {
	if !a.at(point) {
		return nil
	}
	switch a.action {
	case "refuse":
		return a.refusal()
	case "rewrite":
		in.SystemPrompt += " [rewritten at " + point + "]"
	}
	return nil
}

func (a *actor) Around(ctx context.Context, _ *aspects.Point, in *aspects.RunInput, next aspects.RunFunc) (*aspects.RunOutput, error) {
	if a.at("around") {
		switch a.action {
		case "refuse":
			return nil, a.refusal()
		case "rewrite":
			return &aspects.RunOutput{Content: "from around"}, nil
		}
	}
	return next(ctx, in)
}

func (a *actor) After(_ context.Context, _ *aspects.Point, out *aspects.RunOutput) error {
	if a.at("after") {
		switch a.action {
		case "refuse":
			return a.refusal()
		case "rewrite":
			out.Content = "from after"
		}
	}
	return nil
}

func (a *actor) OnCompleted(_ context.Context, _ *aspects.Point, out *aspects.RunOutput, _ error) {
	if a.at("completed") {
		switch a.action {
		case "refuse":
			panic("a completed aspect cannot refuse")
		case "rewrite":
			out.Content = "from completed"
		}
	}
}

func (a *actor) BeforeLLM(_ context.Context, _ *aspects.Point, req *aspects.LLMRequest) error {
	if a.at("beforeLLM") {
		switch a.action {
		case "refuse":
			return a.refusal()
		case "rewrite":
			req.Messages = append(slices.Clone(req.Messages), events.Message{Role: events.RoleUser, Content: "injected"})
			req.ToolNames = []string{"granted_by_the_aspect"}
		}
	}
	return nil
}

func (a *actor) AfterLLM(_ context.Context, _ *aspects.Point, r *aspects.LLMResponse) error {
	if a.at("afterLLM") {
		switch a.action {
		case "refuse":
			return a.refusal()
		case "rewrite":
			r.Model = "rewritten-model"
			r.Usage = aspects.Usage{PromptTokens: 5, CompletionTokens: 7, TotalTokens: 12}
			if len(r.ToolCalls) > 0 {
				r.ToolCalls = slices.Clone(r.ToolCalls)
				r.ToolCalls[0].Arguments = `{"a":40,"b":2}`
			} else {
				r.Content = "from afterLLM"
			}
		}
	}
	return nil
}

func (a *actor) OnChunk(_ context.Context, _ *aspects.Point, c *aspects.Chunk) error {
	if a.at("chunk") && c.Kind == aspects.ChunkText {
		switch a.action {
		case "refuse":
			if strings.Contains(c.Delta, "sum") {
				return a.refusal()
			}
		case "rewrite":
			c.Delta = strings.ToUpper(c.Delta)
		}
	}
	return nil
}

func (a *actor) BeforeToolCall(_ context.Context, _ *aspects.Point, c *aspects.ToolCall) error {
	if a.at("toolBefore") {
		switch a.action {
		case "refuse":
			return a.refusal()
		case "rewrite":
			c.Args = json.RawMessage(`{"a":40,"b":2}`)
		}
	}
	return nil
}

func (a *actor) AfterToolCall(_ context.Context, _ *aspects.Point, _ *aspects.ToolCall, r *aspects.ToolResult) error {
	if a.at("toolAfter") {
		switch a.action {
		case "refuse":
			return a.refusal()
		case "rewrite":
			r.Content = "rewritten with " + contractSecret + " " + strings.Repeat("and a long tail ", 40)
		}
	}
	return nil
}

// contractRun is one cell's run.
type contractRun struct {
	srv   *llmtest.Server
	calls callCounter
	out   *Output
	err   error
	rec   events.Recorder
}

func (c *contractRun) refused(t *testing.T) {
	t.Helper()
	var re *RunError
	if !errors.As(c.err, &re) || re.Code != CodeRefused || !strings.Contains(c.err.Error(), "refused by the test") {
		t.Fatalf("err %v, want an aspect_refused run error", c.err)
	}
	if last := c.rec.Events()[len(c.rec.Events())-1]; last.Type != events.RunError || last.Code != CodeRefused {
		t.Errorf("terminal event %+v", last)
	}
}

func (c *contractRun) succeeded(t *testing.T, answer string) {
	t.Helper()
	if c.err != nil {
		t.Fatalf("run failed: %v", c.err)
	}
	if c.out.Content != answer {
		t.Errorf("answer %q, want %q", c.out.Content, answer)
	}
	fin := c.rec.Events()[len(c.rec.Events())-1]
	if want, _ := json.Marshal(answer); fin.Type != events.RunFinished || string(fin.Result) != string(want) {
		t.Errorf("terminal event %+v", fin)
	}
}

func (c *contractRun) eventsContain(s string) bool {
	for _, js := range c.rec.JSON() {
		if strings.Contains(string(js), s) {
			return true
		}
	}
	return false
}

// texts are the text messages sent, each its deltas joined.
func (c *contractRun) texts() []string {
	var out []string
	var cur strings.Builder
	for _, e := range c.rec.Events() {
		switch e.Type {
		case events.TextMessageContent:
			cur.WriteString(e.Delta)
		case events.TextMessageEnd:
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	return out
}

func (c *contractRun) textSent(s string) bool { return slices.Contains(c.texts(), s) }

// allText is every text delta sent, joined.
func (c *contractRun) allText() string { return strings.Join(c.texts(), "") }

func (c *contractRun) result(t *testing.T) events.Event {
	t.Helper()
	for _, e := range c.rec.Events() {
		if e.Type == events.ToolCallResult {
			return e
		}
	}
	t.Fatal("no TOOL_CALL_RESULT")
	return events.Event{}
}

// modelRead is the tool result the model read in the second request.
func (c *contractRun) modelRead(t *testing.T) string {
	t.Helper()
	reqs := c.srv.Requests()
	if len(reqs) < 2 || len(reqs[1].ToolResults()) != 1 {
		t.Fatalf("%d requests: no tool result sent back", len(reqs))
	}
	return reqs[1].ToolResults()[0].Content
}

func runContract(t *testing.T, a *actor, stream bool) *contractRun {
	t.Helper()
	c := &contractRun{srv: llmtest.NewServer(t, contractScript())}
	h := &harness{t: t, srv: c.srv, stream: stream, tools: []string{"add"}, as: []aspects.Aspect{a},
		llm: LLMConfig{Endpoints: []Endpoint{{URL: c.srv.URL, Key: "sk-test", Model: "test-model"}}},
		cfg: Config{ParallelToolCalls: true, MaxToolOutputLength: 300}}
	ag := h.agent()
	sc := scrub.New()
	sc.AddSecrets(contractSecret)
	c.out, c.err = ag.Run(context.Background(), Input{Messages: []events.Message{{Role: events.RoleUser, Content: "Add 1 and 2."}},
		SystemPrompt: "You add.", Stream: stream, Scrubber: sc}, &c.rec)
	c.calls.n = h.calls.n
	for _, v := range aguicheck.Check(c.rec.JSON()) {
		t.Errorf("AG-UI violation: %v", v)
	}
	return c
}

func TestAspectContract(t *testing.T) {
	// The real client judges every cell's stream at the end, in one run.
	var mu sync.Mutex
	var streams [][][]byte
	defer func() { aguicheck.ClientSubtest(t, streams...) }()
	keep := func(c *contractRun) *contractRun {
		mu.Lock()
		streams = append(streams, c.rec.JSON())
		mu.Unlock()
		return c
	}
	for _, row := range contractTable {
		for mode, stream := range []bool{true, false} {
			name := row.point + "/streaming"
			if !stream {
				name = row.point + "/not-streaming"
			}
			t.Run(name+"/pass", func(t *testing.T) {
				a := &actor{point: row.point, action: "pass"}
				c := keep(runContract(t, a, stream))
				c.succeeded(t, contractAnswer)
				if e := c.result(t); e.Content != "3" {
					t.Errorf("result %+v", e)
				}
				if !slices.Contains(a.seen, row.point) {
					t.Errorf("%s was never invoked (seen %v)", row.point, a.seen)
				}
			})
			t.Run(name+"/refuse", func(t *testing.T) {
				row.refusal[mode].check(t, keep(runContract(t, &actor{point: row.point, action: "refuse"}, stream)))
			})
			t.Run(name+"/rewrite", func(t *testing.T) {
				row.rewrite[mode].check(t, keep(runContract(t, &actor{point: row.point, action: "rewrite"}, stream)))
			})
		}
	}
}

// contractMarkdown renders contractTable as the README's table: one row
// per point and mode, "both" when the modes agree.
func contractMarkdown() string {
	var b strings.Builder
	b.WriteString("| point | method | mode | a refusal (an error returned) | a rewrite |\n|---|---|---|---|---|\n")
	for _, r := range contractTable {
		modes := []string{"streaming", "not streaming"}
		if r.refusal[0].text == r.refusal[1].text && r.rewrite[0].text == r.rewrite[1].text {
			modes = []string{"both"}
		}
		for i, m := range modes {
			b.WriteString("| " + r.name + " | `" + r.method + "` | " + m + " | " + r.refusal[i].text + " | " + r.rewrite[i].text + " |\n")
		}
	}
	return b.String()
}

// TestAspectContractREADME: the README's aspect contract table is the one
// TestAspectContract checks, word for word.
func TestAspectContractREADME(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := contractMarkdown()
	if !strings.Contains(string(readme), want) {
		t.Fatalf("README.md's Aspects section must hold this table (rendered from contractTable):\n\n%s", want)
	}
}
