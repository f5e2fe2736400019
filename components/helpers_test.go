package components

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/aguicheck"
	"github.com/ruleagent/ruleagent/tools"
)

// testAddCalls counts calls of the test_add builtin.
var testAddCalls atomic.Int64

func init() {
	tools.MustRegister(tools.Definition{Name: "test_add", Description: "Adds two numbers (tests only).",
		New: func(tools.BuildContext, json.RawMessage) (tools.Tool, error) {
			return tools.Func{Spec: tools.Info{Name: "test_add", Description: "Adds two numbers.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
				Fn: func(ctx context.Context, args json.RawMessage) (tools.Result, error) {
					testAddCalls.Add(1)
					var v struct{ A, B float64 }
					if err := json.Unmarshal(args, &v); err != nil {
						return tools.Result{}, err
					}
					return tools.TextResult(strconv.FormatFloat(v.A+v.B, 'f', -1, 64)), nil
				}}, nil
		}})
}

var chainSeq atomic.Int64

// agentChain builds a one-node agent chain; extra config merges into the
// node's configuration.
func agentChain(t *testing.T, url string, extra map[string]any) (string, []byte) {
	t.Helper()
	id := "test-chain-" + strconv.FormatInt(chainSeq.Add(1), 10)
	cfg := map[string]any{"url": url, "key": "sk-test-key-123456", "model": "test-model",
		"systemPrompt": "You help ${metadata.userName}.", "retryBackoff": "1ms"}
	for k, v := range extra {
		cfg[k] = v
	}
	dsl := map[string]any{
		"ruleChain": map[string]any{"id": id, "name": "Test agent"},
		"metadata": map[string]any{
			"firstNodeIndex": 0,
			"nodes":          []any{map[string]any{"id": "agent", "type": AgentType, "name": "Agent", "configuration": cfg}},
			"connections":    []any{},
		},
	}
	b, err := json.Marshal(dsl)
	if err != nil {
		t.Fatal(err)
	}
	return id, b
}

// newEngine creates a chain in a private pool, stopped at cleanup.
func newEngine(t *testing.T, id string, dsl []byte) types.RuleEngine {
	t.Helper()
	pool := rulego.NewRuleGo()
	e, err := pool.New(id, dsl, rulego.WithConfig(rulego.NewConfig()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Stop)
	return e
}

// end is one OnEnd callback.
type end struct {
	msg types.RuleMsg
	err error
	rel string
}

type result struct {
	mu   sync.Mutex
	ends []end
	rec  events.Recorder
}

func (r *result) terminal() []end {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []end
	for _, e := range r.ends {
		if e.rel != types.Stream {
			out = append(out, e)
		}
	}
	return out
}

func (r *result) streamed() []end {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []end
	for _, e := range r.ends {
		if e.rel == types.Stream {
			out = append(out, e)
		}
	}
	return out
}

// send runs msg through e with a Sink in the context (stream mode) or
// without (sync mode), and waits for completion with a deadline so that a
// hang fails the test instead of blocking it.
func send(t *testing.T, ctx context.Context, e types.RuleEngine, data string, md map[string]string, withSink bool) *result {
	t.Helper()
	r := &result{}
	meta := types.NewMetadata()
	for k, v := range md {
		meta.PutValue(k, v)
	}
	dt := types.TEXT
	if len(data) > 0 && data[0] == '{' {
		dt = types.JSON
	}
	msg := types.NewMsg(0, "CHAT", dt, meta, data)
	if withSink {
		ctx = events.WithSink(ctx, &r.rec)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.OnMsgAndWait(msg, types.WithContext(ctx), types.WithOnEnd(func(_ types.RuleContext, m types.RuleMsg, err error, rel string) {
			r.mu.Lock()
			r.ends = append(r.ends, end{msg: m, err: err, rel: rel})
			r.mu.Unlock()
		}))
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("OnMsgAndWait did not return: the node hung")
	}
	return r
}

// checkEvents asserts the AG-UI rules on a recorded stream, with our checker
// and (in a subtest that alone skips without Node) the real client.
func checkEvents(t *testing.T, rec *events.Recorder) {
	t.Helper()
	js := rec.JSON()
	if len(js) == 0 {
		t.Fatal("no events")
	}
	aguicheck.CheckStream(t, js)
}

func oneTerminal(t *testing.T, r *result, rel string) *end {
	t.Helper()
	ends := r.terminal()
	if len(ends) != 1 {
		t.Fatalf("%d terminal ends, want exactly 1: %+v", len(ends), ends)
	}
	if ends[0].rel != rel {
		t.Fatalf("ended with %s (err %v), want %s", ends[0].rel, ends[0].err, rel)
	}
	return &ends[0]
}
