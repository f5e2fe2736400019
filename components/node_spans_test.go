package components

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/ruleagent/ruleagent/telemetry"
)

// openSpans counts the spans started and not ended, by name.
type openSpans struct {
	mu   sync.Mutex
	open map[string]int
}

func (o *openSpans) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	o.mu.Lock()
	o.open[s.Name()]++
	o.mu.Unlock()
}

func (o *openSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	o.mu.Lock()
	if o.open[s.Name()]--; o.open[s.Name()] == 0 {
		delete(o.open, s.Name())
	}
	o.mu.Unlock()
}

func (*openSpans) Shutdown(context.Context) error   { return nil }
func (*openSpans) ForceFlush(context.Context) error { return nil }

func (o *openSpans) names() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := map[string]int{}
	for k, v := range o.open {
		m[k] = v
	}
	return m
}

// refuseNode is a RuleGo Around aspect that refuses to run one node (a
// policy's refusal), telling nothing.
type refuseNode struct{ id string }

func (*refuseNode) Order() int          { return 900 }
func (a *refuseNode) New() types.Aspect { return a }
func (a *refuseNode) PointCut(ctx types.RuleContext, _ types.RuleMsg, _ string) bool {
	return ctx.GetSelfId() == a.id
}
func (*refuseNode) Around(_ types.RuleContext, msg types.RuleMsg, _ string) (types.RuleMsg, bool) {
	return msg, false
}

// panicNode panics in OnMsg (RuleGo recovers and ends the branch).
type panicNode struct{}

func (*panicNode) Type() string                                 { return "test/panic" }
func (*panicNode) New() types.Node                              { return &panicNode{} }
func (*panicNode) Init(types.Config, types.Configuration) error { return nil }
func (*panicNode) Destroy()                                     {}
func (*panicNode) OnMsg(types.RuleContext, types.RuleMsg)       { panic("the node broke") }

func init() { _ = rulego.Registry.Register(&panicNode{}) }

// Every node span NodeSpans starts ends, also for a node an aspect
// refuses before it runs, and for a node that panics: the step is ended
// with an error saying it told no result, when its chain run completes.
func TestEveryNodeSpanEnds(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	open := &openSpans{open: map[string]int{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(open), sdktrace.WithSyncer(exp))
	telemetry.Install(tp, telemetry.Options{})
	t.Cleanup(func() { telemetry.Install(nil, telemetry.Options{}) })

	p := pool(t)
	for _, c := range []struct {
		name  string
		nodes []map[string]any
		opts  []types.RuleEngineOption
		// refused is the node whose span ends without a result.
		refused string
	}{
		{name: "refused by an aspect", nodes: []map[string]any{jsNode("first", "First", "return {msg: msg, metadata: metadata, msgType: msgType};"),
			jsNode("second", "Second", "return {msg: msg, metadata: metadata, msgType: msgType};")},
			opts: []types.RuleEngineOption{types.WithAspects(&refuseNode{id: "second"})}, refused: "second"},
		{name: "panics", nodes: []map[string]any{jsNode("first", "First", "return {msg: msg, metadata: metadata, msgType: msgType};"),
			{"id": "second", "type": "test/panic", "name": "Second"}}, refused: "second"},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp.Reset()
			b, err := json.Marshal(chain("spans-"+itoa(len(c.opts)), "Spans", nil, c.nodes, [3]string{"first", "second", types.Success}))
			if err != nil {
				t.Fatal(err)
			}
			e, err := p.New("spans-"+itoa(len(c.opts)), b, append([]types.RuleEngineOption{rulego.WithConfig(rulego.NewConfig())}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Del(e.Id())
			ctx, run := tp.Tracer("test").Start(context.Background(), "run")
			done := make(chan struct{})
			go func() {
				defer close(done)
				e.OnMsgAndWait(types.NewMsg(0, "T", types.JSON, types.NewMetadata(), "{}"), types.WithContext(ctx))
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the run did not complete")
			}
			run.End()
			// The completion aspects run before OnMsgAndWait returns.
			if left := open.names(); len(left) != 0 {
				t.Fatalf("spans never ended: %v", left)
			}
			var got bool
			for _, s := range exp.GetSpans() {
				if s.Name == "node "+c.refused {
					got = true
					if s.Status.Description == "" {
						t.Errorf("the %s node's span ended with no error: %+v", c.refused, s.Status)
					}
				}
			}
			if !got {
				t.Fatalf("no span of node %s among %d", c.refused, len(exp.GetSpans()))
			}
		})
	}
}
