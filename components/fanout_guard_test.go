package components

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"
)

// stallingPool starts each task at once, then keeps the submitter waiting a
// moment: the node handing a message to several successors is held between
// two of them, as a preempted thread would be. That is the window in which
// RuleGo v0.37 (without the fan-out guard) reported a run complete after
// its first branch.
type stallingPool struct{ stall time.Duration }

func (p stallingPool) Submit(task func()) error {
	go task()
	time.Sleep(p.stall)
	return nil
}

func (stallingPool) Release() {}

// TestFanOutCompletesAfterEveryBranch: RuleGo counts a node's successors
// one at a time while it hands the message to each, so the first successor
// could finish, and the run report completion, before the others were
// counted; a chain tool then lost every end but the first (seen in CI as
// "result: second"). With the fan-out guard, OnMsgAndWait returns only after
// every branch ended, and a branch that is cancelled does not hold the
// others.
func TestFanOutCompletesAfterEveryBranch(t *testing.T) {
	p := pool(t)
	const branches = 3
	nodes := []map[string]any{{"id": "split", "type": "fork", "name": "Split"}}
	var conns [][3]string
	for i := range branches {
		id := "leaf" + itoa(i)
		nodes = append(nodes, map[string]any{"id": id, "type": "test/count", "name": id})
		conns = append(conns, [3]string{"split", id, "Success"})
	}
	// The chain starts with one branch, and gets the others through
	// RuleGo's ReloadSelf, which changes the chain in place: the guard must
	// see the new version's fan-out.
	one := dsl(t, chain("fan-out", "Fan out", nil, nodes[:2], conns[0]))
	cfg := rulego.NewConfig(types.WithPool(stallingPool{stall: 5 * time.Millisecond}))
	e, err := p.New("fan-out", one, rulego.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ends := func() int32 {
		var n atomic.Int32
		e.OnMsgAndWait(types.NewMsg(0, "T", types.JSON, types.NewMetadata(), "{}"),
			types.WithOnEnd(func(types.RuleContext, types.RuleMsg, error, string) { n.Add(1) }))
		return n.Load()
	}
	if n := ends(); n != 1 {
		t.Fatalf("one branch: %d ends", n)
	}
	if err := e.ReloadSelf(dsl(t, chain("fan-out", "Fan out", nil, nodes, conns...))); err != nil {
		t.Fatal(err)
	}
	for run := range 5 {
		if n := ends(); n != branches {
			t.Fatalf("run %d: OnMsgAndWait returned after %d of %d branch ends", run, n, branches)
		}
	}
}

// TestFanOutGuardLetsACancelledRunGo: a successor held for its siblings is
// let go when its run is cancelled; it does not wait for siblings the
// engine will never start.
func TestFanOutGuardLetsACancelledRunGo(t *testing.T) {
	p := pool(t)
	nodes := []map[string]any{{"id": "split", "type": "fork", "name": "Split"},
		{"id": "a", "type": "test/count", "name": "A"}, {"id": "b", "type": "test/count", "name": "B"}}
	chainDSL := dsl(t, chain("fan-out-cancel", "Fan out", nil, nodes, [3]string{"split", "a", "Success"}, [3]string{"split", "b", "Success"}))
	// The handing node is held 800ms after starting A: without the
	// cancellation, A would wait that long for B.
	cfg := rulego.NewConfig(types.WithPool(stallingPool{stall: 800 * time.Millisecond}))
	e, err := p.New("fan-out-cancel", chainDSL, rulego.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	e.OnMsgAndWait(types.NewMsg(0, "T", types.JSON, types.NewMetadata(), "{}"), types.WithContext(ctx))
	ran, ok := countRan.Load("fan-out-cancel/a")
	if !ok {
		t.Fatal("A never ran")
	}
	if d := ran.(time.Time).Sub(start); d > 600*time.Millisecond {
		t.Fatalf("A ran %v after the start: it waited for B past its run's cancellation", d)
	}
	// B never started: its hand-off stays pending until it is stale, then
	// the guard forgets it.
	var g *fanOutGuard
	for _, a := range e.(*engine.RuleEngine).Aspects {
		if fg, ok := a.(*fanOutGuard); ok {
			g = fg
		}
	}
	if g == nil {
		t.Fatal("the engine has no fan-out guard")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.pending) != 1 {
		t.Fatalf("pending hand-offs: %d, want the cancelled one", len(g.pending))
	}
	g.sweep(time.Now().Add(2 * fanOutStale))
	if len(g.pending) != 0 {
		t.Fatalf("a stale hand-off was kept: %d pending", len(g.pending))
	}
}

// countRan records when each test/count node last ran, by chain/node.
var countRan sync.Map

// countNode passes the message on at once: the fastest possible branch.
type countNode struct{}

func (*countNode) Type() string                                 { return "test/count" }
func (*countNode) New() types.Node                              { return &countNode{} }
func (*countNode) Init(types.Config, types.Configuration) error { return nil }
func (*countNode) Destroy()                                     {}
func (*countNode) OnMsg(ctx types.RuleContext, msg types.RuleMsg) {
	countRan.Store(ctx.RuleChain().GetNodeId().Id+"/"+ctx.GetSelfId(), time.Now())
	ctx.TellSuccess(msg)
}
