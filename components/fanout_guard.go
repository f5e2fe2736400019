package components

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"
)

// fanOutGuard mends a race in RuleGo v0.37's completion counting. When a
// node hands a message to several successors on one relation, the engine
// counts them one at a time, each just before starting it. If the node's
// goroutine is held between two of them (a preempted thread is enough), the
// first successor can finish, the count drop to zero, and the run report
// completion (OnMsgAndWait returns, OnAllNodeCompleted fires) while the
// other successors have not started. A chain called as a tool then answered
// with its first end only, and a /run of a fork chain could finish early.
//
// The guard holds each successor of such a hand-off at its start (a RuleGo
// Before aspect) until all its siblings have started too, which means the
// engine has counted every one of them. The hand-off is announced by the
// After aspect the engine runs on the handing node just before the
// successors are told; siblings are matched by the handing node and the
// message id, which the copies each successor gets keep.
//
// Not covered: one Tell on several relations at once (a jsSwitch matching
// two cases) whose relations each have a single successor; the engine
// announces each relation only as it reaches it.
//
// The guard is one of RuleGo's built-in aspects from this package's init,
// so every engine of the process has it, plain RuleGo pools included.
type fanOutGuard struct {
	mu      sync.Mutex
	pending map[handOff][]*siblings
	swept   time.Time
	// shape is the fan-outs of the chain version last seen: most chains
	// have none, and then the guard costs a read of the chain's definition
	// pointer per node.
	shape atomic.Pointer[chainShape]
}

// chainShape lists, for one version of a chain, the relations on which a
// node has two or more successors, with their number.
type chainShape struct {
	def     *types.RuleChain
	fanOuts map[relation]int
}

type relation struct{ from, kind string }

// handOff names the message one node handed to its successors.
type handOff struct{ from, msgID string }

// siblings are the successors of one hand-off: released once want of them
// have started.
type siblings struct {
	want, started int
	released      chan struct{}
	at            time.Time
}

const (
	// fanOutOrder runs the guard after every other Before aspect (the
	// engine's debug trace records the node's input first) and after every
	// other After aspect (it sees the message the successors will get).
	fanOutOrder = 10_000
	// fanOutWait bounds how long a successor waits for its siblings: they
	// are started microseconds apart, so only a pool that blocks its
	// submitter could come near it, and then the run goes on unguarded
	// rather than stalled.
	fanOutWait = 2 * time.Second
	// fanOutStale is the age past which a hand-off whose successors never
	// all started (a cancelled run, a node told to skip its successors) is
	// forgotten.
	fanOutStale = time.Minute
)

func init() {
	engine.BuiltinsAspects = append(engine.BuiltinsAspects, &fanOutGuard{})
}

func (*fanOutGuard) Order() int { return fanOutOrder }

// New implements types.Aspect: one guard per engine.
func (*fanOutGuard) New() types.Aspect { return &fanOutGuard{} }

// PointCut keeps out streamed chunks (the engine tells Stream successors
// in order, on the handing node's own goroutine, and does not count them)
// and chains without a fan-out.
func (g *fanOutGuard) PointCut(ctx types.RuleContext, _ types.RuleMsg, relationType string) bool {
	return relationType != types.Stream && len(g.shapeOf(ctx).fanOuts) > 0
}

// shapeOf returns the fan-outs of the chain version ctx runs. A version
// is its definition: RuleGo's ReloadSelf replaces it in the same chain
// context.
func (g *fanOutGuard) shapeOf(ctx types.RuleContext) *chainShape {
	var def *types.RuleChain
	if rc, ok := ctx.RuleChain().(*engine.RuleChainCtx); ok && rc != nil {
		def = rc.Definition()
	}
	if sh := g.shape.Load(); sh != nil && sh.def == def {
		return sh
	}
	sh := &chainShape{def: def, fanOuts: map[relation]int{}}
	if def != nil {
		for _, c := range def.Metadata.Connections {
			sh.fanOuts[relation{c.FromId, c.Type}]++
		}
		for r, n := range sh.fanOuts {
			if n < 2 {
				delete(sh.fanOuts, r)
			}
		}
	}
	g.shape.Store(sh)
	return sh
}

// successors is the number of successors a hand-off from node id on
// relationType has, when there are two or more; 0 otherwise.
func (g *fanOutGuard) successors(ctx types.RuleContext, id types.RuleNodeId, relationType string) int {
	return g.shapeOf(ctx).fanOuts[relation{id.Id, relationType}]
}

// After announces a hand-off to two or more successors.
func (g *fanOutGuard) After(ctx types.RuleContext, msg types.RuleMsg, _ error, relationType string) types.RuleMsg {
	self := ctx.Self()
	if self == nil {
		return msg
	}
	n := g.successors(ctx, self.GetNodeId(), relationType)
	if n < 2 {
		return msg
	}
	now := time.Now()
	k := handOff{from: self.GetNodeId().Id, msgID: msg.Id}
	g.mu.Lock()
	if g.pending == nil {
		g.pending = map[handOff][]*siblings{}
	}
	g.sweep(now)
	g.pending[k] = append(g.pending[k], &siblings{want: n, released: make(chan struct{}), at: now})
	g.mu.Unlock()
	return msg
}

// Before holds a successor of an announced hand-off until its siblings have
// started, or its run is cancelled.
func (g *fanOutGuard) Before(ctx types.RuleContext, msg types.RuleMsg, relationType string) types.RuleMsg {
	from := ctx.From()
	if from == nil || g.successors(ctx, from.GetNodeId(), relationType) < 2 {
		return msg
	}
	k := handOff{from: from.GetNodeId().Id, msgID: msg.Id}
	g.mu.Lock()
	queue := g.pending[k]
	if len(queue) == 0 {
		g.mu.Unlock()
		return msg
	}
	s := queue[0]
	s.started++
	if s.started == s.want {
		close(s.released)
		if len(queue) == 1 {
			delete(g.pending, k)
		} else {
			g.pending[k] = queue[1:]
		}
		g.mu.Unlock()
		return msg
	}
	g.mu.Unlock()
	var done <-chan struct{}
	if c := ctx.GetContext(); c != nil {
		done = c.Done()
	}
	t := time.NewTimer(fanOutWait)
	defer t.Stop()
	select {
	case <-s.released:
	case <-done:
	case <-t.C:
	}
	return msg
}

// sweep forgets stale hand-offs, at most once per fanOutStale. Called with
// g.mu held.
func (g *fanOutGuard) sweep(now time.Time) {
	if now.Sub(g.swept) < fanOutStale {
		return
	}
	g.swept = now
	for k, queue := range g.pending {
		if now.Sub(queue[len(queue)-1].at) > fanOutStale {
			for _, s := range queue {
				if s.started < s.want {
					close(s.released)
				}
			}
			delete(g.pending, k)
		}
	}
}
