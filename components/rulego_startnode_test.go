package components

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// What resuming a paused run relies on in RuleGo v0.37, checked on the
// version we pin: types.WithStartNode enters a chain at a node of its own
// with the message and context given (the nodes before it do not run,
// those after it do, as after any message), and a node that tells a
// relation no connection takes ends its branch, so the chain completes.

// tellNode tells the relation its configuration names.
type tellNode struct{ rel string }

func (*tellNode) Type() string    { return "test/tell" }
func (*tellNode) New() types.Node { return &tellNode{} }
func (*tellNode) Destroy()        {}
func (n *tellNode) Init(_ types.Config, c types.Configuration) error {
	n.rel, _ = c["relation"].(string)
	return nil
}
func (n *tellNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) { ctx.TellNext(msg, n.rel) }

func init() { _ = rulego.Registry.Register(&tellNode{}) }

type ctxKey struct{}

func TestRuleGoStartNodeEntersAtANode(t *testing.T) {
	p := pool(t)
	e := deploy(t, p, chain("startnode", "Start node", nil, []map[string]any{
		{"id": "first", "type": "test/mark", "name": "First"},
		{"id": "middle", "type": "test/mark", "name": "Middle"},
		{"id": "last", "type": "test/mark", "name": "Last"},
	}, [3]string{"first", "middle", "Success"}, [3]string{"middle", "last", "Success"}))
	md := types.NewMetadata()
	md.PutValue("k", "v")
	msg := types.NewMsg(0, "CHAT", types.TEXT, md, "hello")
	var ends []string
	var mu sync.Mutex
	done := make(chan struct{})
	ctx := context.WithValue(context.Background(), ctxKey{}, "carried")
	var seen any
	e.OnMsg(msg, types.WithStartNode("middle"), types.WithContext(ctx),
		types.WithOnNodeCompleted(func(rc types.RuleContext, _ types.RuleNodeRunLog) {
			if rc.GetSelfId() == "middle" {
				mu.Lock()
				seen = rc.GetContext().Value(ctxKey{})
				mu.Unlock()
			}
		}),
		types.WithOnEnd(func(rc types.RuleContext, m types.RuleMsg, err error, rel string) {
			mu.Lock()
			ends = append(ends, rc.GetSelfId()+":"+rel)
			mu.Unlock()
		}), types.WithOnAllNodeCompleted(func() { close(done) }))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the chain entered at a node did not complete")
	}
	if n := len(marked("startnode")); n != 2 {
		t.Fatalf("%d nodes ran, want middle and last", n)
	}
	for _, m := range marked("startnode") {
		if m.GetData() != "hello" || m.Metadata.GetValue("k") != "v" {
			t.Errorf("a node saw %q %v, not the message given", m.GetData(), m.Metadata.Values())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 1 || ends[0] != "last:Success" {
		t.Errorf("ends %v, want last:Success", ends)
	}
	if seen != "carried" {
		t.Errorf("the start node's context carried %v", seen)
	}

	// An unknown node: RuleGo ends the message at once with a Failure.
	failed := make(chan error, 1)
	e.OnMsg(msg, types.WithStartNode("nope"), types.WithOnEnd(func(_ types.RuleContext, _ types.RuleMsg, err error, rel string) {
		failed <- err
	}))
	select {
	case err := <-failed:
		if err == nil {
			t.Error("entering at an unknown node did not fail")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("entering at an unknown node never ended")
	}
}

// A relation no connection takes ends the branch: the chain completes, the
// nodes after it do not run, and OnEnd reports that relation (or nothing,
// in a chain with an end node).
func TestRuleGoUnconnectedRelationEndsTheBranch(t *testing.T) {
	p := pool(t)
	e := deploy(t, p, chain("unconnected", "Unconnected", nil, []map[string]any{
		{"id": "pause", "type": "test/tell", "name": "Pause", "configuration": map[string]any{"relation": "ruleagent.suspended"}},
		{"id": "after", "type": "test/mark", "name": "After"},
	}, [3]string{"pause", "after", "Success"}))
	var rels []string
	done := make(chan struct{})
	e.OnMsg(types.NewMsg(0, "CHAT", types.TEXT, types.NewMetadata(), "x"),
		types.WithOnEnd(func(_ types.RuleContext, _ types.RuleMsg, _ error, rel string) { rels = append(rels, rel) }),
		types.WithOnAllNodeCompleted(func() { close(done) }))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the chain did not complete")
	}
	if len(marked("unconnected")) != 0 {
		t.Error("a node after the unconnected relation ran")
	}
	if len(rels) != 1 || rels[0] != "ruleagent.suspended" {
		t.Errorf("ends %v", rels)
	}
}
