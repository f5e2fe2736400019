package agent

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
)

// testRegistry holds the test tools: add (numbers), slow (waits for its
// context) and count (counts its calls).
func testRegistry(t testing.TB, calls *callCounter) *tools.Registry {
	reg := tools.NewRegistry()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(reg.Register(tools.Definition{Name: "add", New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
		return tools.Func{Spec: tools.Info{Name: "add", Description: "Adds two numbers.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
			Fn: func(_ context.Context, args json.RawMessage) (tools.Result, error) {
				calls.inc("add")
				var v struct{ A, B float64 }
				if err := json.Unmarshal(args, &v); err != nil {
					return tools.Result{}, err
				}
				return tools.TextResult(strconv.FormatFloat(v.A+v.B, 'f', -1, 64)), nil
			}}, nil
	}}))
	must(reg.Register(tools.Definition{Name: "slow", New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
		return tools.Func{Spec: tools.Info{Name: "slow", Description: "Waits."},
			Fn: func(ctx context.Context, _ json.RawMessage) (tools.Result, error) {
				calls.inc("slow")
				select {
				case <-ctx.Done():
					calls.inc("slow-cancelled")
					return tools.Result{}, ctx.Err()
				case <-time.After(10 * time.Second):
					return tools.TextResult("done"), nil
				}
			}}, nil
	}}))
	return reg
}

type callCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounter) inc(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *callCounter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

type harness struct {
	t      *testing.T
	srv    *llmtest.Server
	calls  callCounter
	cfg    Config
	llm    LLMConfig
	tools  []string
	as     []aspects.Aspect
	stream bool
}

func newHarness(t *testing.T, script llmtest.Script) *harness {
	srv := llmtest.NewServer(t, script)
	return &harness{t: t, srv: srv, stream: true,
		llm: LLMConfig{Endpoints: []Endpoint{{URL: srv.URL, Key: "sk-test", Model: "test-model"}}, RetryBackoff: time.Millisecond},
		cfg: Config{ParallelToolCalls: true}}
}

func (h *harness) agent() *Agent {
	h.t.Helper()
	client, err := NewClient(h.llm)
	if err != nil {
		h.t.Fatal(err)
	}
	var specs []tools.Spec
	for _, n := range h.tools {
		specs = append(specs, tools.Spec{Type: tools.TypeBuiltin, Name: n})
	}
	set, err := tools.Build(context.Background(), specs, tools.BuildEnv{Registry: testRegistry(h.t, &h.calls)})
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := aspects.NewManager(h.as...)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg := h.cfg
	cfg.LLM, cfg.Tools, cfg.Aspects = client, set, m
	a, err := New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// run runs one conversation and checks its event stream against the AG-UI
// rules, with our checker and (in a subtest of its own) with the real
// @ag-ui/client.
func (h *harness) run(ctx context.Context, text string) (*Output, *events.Recorder, error) {
	h.t.Helper()
	var rec events.Recorder
	out, err := h.agent().Run(ctx, Input{Messages: []events.Message{{Role: events.RoleUser, Content: text}},
		SystemPrompt: "You are a test agent.", Stream: h.stream}, &rec)
	checkStream(h.t, &rec)
	return out, &rec, err
}

func checkStream(t *testing.T, rec *events.Recorder) {
	t.Helper()
	aguicheck.CheckStream(t, rec.JSON())
	terminals := 0
	for _, ty := range rec.Types() {
		if ty.Terminal() {
			terminals++
		}
	}
	if terminals != 1 {
		t.Errorf("%d terminal events: %v", terminals, rec.Types())
	}
}

func countType(rec *events.Recorder, ty events.Type) int {
	n := 0
	for _, x := range rec.Types() {
		if x == ty {
			n++
		}
	}
	return n
}
