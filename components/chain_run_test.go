package components

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// stubbornNode ignores cancellation: it waits until the test releases it
// (configuration key), then writes an event into its run's sink and goes
// on, as a node doing blocking work would.
type stubbornNode struct{ key string }

var stubborn = struct {
	sync.Mutex
	release map[string]chan struct{}
}{release: map[string]chan struct{}{}}

func releaseOf(key string) chan struct{} {
	stubborn.Lock()
	defer stubborn.Unlock()
	ch, ok := stubborn.release[key]
	if !ok {
		ch = make(chan struct{})
		stubborn.release[key] = ch
	}
	return ch
}

func (*stubbornNode) Type() string    { return "test/stubborn" }
func (*stubbornNode) New() types.Node { return &stubbornNode{} }
func (*stubbornNode) Destroy()        {}
func (n *stubbornNode) Init(_ types.Config, c types.Configuration) error {
	n.key, _ = c["key"].(string)
	return nil
}
func (n *stubbornNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	<-releaseOf(n.key)
	if s := events.SinkFrom(ctx.GetContext()); s != nil {
		s.Emit(events.Event{Type: events.Custom, Name: "test.late", Value: []byte(`"written after the call returned"`)})
	}
	ctx.TellSuccess(msg)
}

func init() { _ = rulego.Registry.Register(&stubbornNode{}) }

// A rule-chain tool whose node ignores cancellation: when the call times
// out, the chain is cancelled and the call returns after the grace; what
// the node does afterwards, while the caller's run goes on, never reaches
// the caller's event stream, and the chain goes no further.
func TestChainToolSilencedAfterItsCallReturned(t *testing.T) {
	p := pool(t)
	key := t.Name()
	release := releaseOf(key)
	deploy(t, p, chain("stubborn", "Stubborn", nil, []map[string]any{
		{"id": "wait", "type": "test/stubborn", "name": "Wait", "configuration": map[string]any{"key": key}},
		{"id": "after", "type": "test/mark", "name": "After"},
	}, [3]string{"wait", "after", "Success"}))
	var once sync.Once
	srv := llmtest.NewServer(t, llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if len(r.ToolResults()) == 0 {
			return llmtest.Calls(llmtest.Call("stubborn", `{}`))
		}
		// The call has returned; the caller's run goes on (this answer is
		// slow) while the stubborn node wakes up and writes.
		once.Do(func() { close(release) })
		return llmtest.Response{Text: "gave up", ChunkDelay: 500 * time.Millisecond}
	}))
	parent := deploy(t, p, chain("stubborn-caller", "Caller", nil, []map[string]any{agentNode(srv.URL, "x", map[string]any{
		"tools": []any{map[string]any{"type": "rulechain", "name": "stubborn", "targetId": "stubborn", "timeout": "200ms"}}})}))
	r := send(t, context.Background(), parent, "go", nil, true)
	end := oneTerminal(t, r, types.Success)
	if !strings.Contains(srv.LastRequest().ToolResults()[0].Content, "timeout") || end.msg.GetData() != "gave up" {
		t.Fatalf("result %q, answer %q", srv.LastRequest().ToolResults()[0].Content, end.msg.GetData())
	}
	for _, e := range r.rec.Events() {
		if e.Type == events.Custom && e.Name == "test.late" {
			t.Errorf("the stopped chain wrote into the caller's stream: %+v", e)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if len(marked("stubborn")) != 0 {
		t.Error("the cancelled chain went on to its next node")
	}
	checkEvents(t, &r.rec)
}

// Ends come in the order of the end nodes in the chain's definition,
// whatever order they happen in.
func TestChainRunEndsInDefinitionOrder(t *testing.T) {
	p := pool(t)
	key := t.Name()
	e := deploy(t, p, chain("ends-order", "Ends", nil, []map[string]any{
		jsNode("split", "Split", `return {msg: msg, metadata: metadata, msgType: msgType};`),
		{"id": "slow", "type": "test/stubborn", "name": "Slow", "configuration": map[string]any{"key": key}},
		jsNode("fast", "Fast", `return {msg: "fast", metadata: metadata, msgType: msgType};`),
	}, [3]string{"split", "slow", "Success"}, [3]string{"split", "fast", "Success"}))
	run := StartChain(context.Background(), e, types.NewMsg(0, "T", types.TEXT, types.NewMetadata(), "slow"), ChainRunOptions{})
	time.Sleep(200 * time.Millisecond) // fast has ended; slow waits
	close(releaseOf(key))
	if err := run.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ends := run.Ends()
	if len(ends) != 2 || ends[0].NodeID != "slow" || ends[1].NodeID != "fast" {
		t.Fatalf("ends %+v", ends)
	}
}
