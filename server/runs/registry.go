// Package runs keeps the runs in progress on a server: what each is (its
// chain, where it came from, when it started), how far it has got (its
// step, tool calls and tokens so far, counted from its own events) and how
// to stop it.
package runs

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/rulego/rulego/api/types"
)

// ErrCancelled is the cause of a run cancelled through Registry.Cancel.
var ErrCancelled = errors.New("the run was cancelled on request")

// ErrShutdown is the cause of a run cancelled because the server stops.
var ErrShutdown = errors.New("the server is shutting down")

// ErrDraining refuses a new run on a server that is shutting down: its
// runs in flight finish, and new ones belong on another replica.
var ErrDraining = errors.New("this server is shutting down (draining): send the run to another replica")

// ErrNotYours refuses to answer, cancel or show a run that another caller
// started.
var ErrNotYours = errors.New("the run belongs to another caller")

// Result is how a chain run ended.
type Result struct {
	// Msg is the final message: the answer in its data, usage and run ids
	// in its metadata.
	Msg types.RuleMsg
	// Relation is Success or Failure.
	Relation string
	// Usage is the run's token usage per provider and model, sub-agents
	// included, and Cost what it cost in Currency (a decimal number, empty
	// without a price table): the figures of its terminal event.
	Usage          []events.TokenUsage
	Cost, Currency string
}

// ErrDuplicate refuses a run id that is already running.
var ErrDuplicate = errors.New("a run with this id is already in progress")

// Info describes a run in progress.
type Info struct {
	RunID    string `json:"runId"`
	ThreadID string `json:"threadId"`
	ChainID  string `json:"chainId"`
	Source   string `json:"source"`
	// User is the verified identity that started the run, when the server
	// verifies identities (empty otherwise, and for the operator).
	User      string    `json:"user,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// Step is the current LLM turn of the run's agent (0 before the first).
	Step int `json:"step"`
	// ToolCalls counts the tool calls so far, sub-agents' included.
	ToolCalls int   `json:"toolCalls"`
	Usage     Usage `json:"usage"`
	// Status is running, or waiting while it waits for answers to
	// Interrupts.
	Status     string             `json:"status"`
	Interrupts []events.Interrupt `json:"interrupts,omitempty"`
	// Replica is the replica running it, in a listing of a fleet's runs
	// (empty when the server keeps no run events).
	Replica string `json:"replica,omitempty"`
}

// Usage is the tokens used so far, sub-agents included.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	TotalTokens  int64 `json:"totalTokens"`
}

// Run is one run in progress. It is an events.Sink: the run's events pass
// through it on their way out, and it counts what it sees.
type Run struct {
	info   Info
	cancel context.CancelCauseFunc
	done   chan struct{}

	step      atomic.Int64
	toolCalls atomic.Int64
	inTokens  atomic.Int64
	outTokens atomic.Int64
	out       events.Sink

	mu         sync.Mutex
	interrupts []events.Interrupt
}

// SetInterrupts records what the run waits for (none: it is running).
func (r *Run) SetInterrupts(ins []events.Interrupt) {
	r.mu.Lock()
	r.interrupts = append([]events.Interrupt(nil), ins...)
	r.mu.Unlock()
}

// ID returns the run's id.
func (r *Run) ID() string { return r.info.RunID }

// Done is closed when the run has ended (Registry.End).
func (r *Run) Done() <-chan struct{} { return r.done }

// Cancel stops the run with cause.
func (r *Run) Cancel(cause error) { r.cancel(cause) }

// Emit implements events.Sink: it counts, then passes e on.
func (r *Run) Emit(e events.Event) {
	switch e.Type {
	case events.StepStarted:
		if e.SubagentRunID == "" && e.Meta.Step > 0 {
			r.step.Store(int64(e.Meta.Step))
		}
	case events.StepFinished:
		if e.Meta.InputTokens != 0 || e.Meta.OutputTokens != 0 {
			r.inTokens.Add(e.Meta.InputTokens)
			r.outTokens.Add(e.Meta.OutputTokens)
		}
	case events.ToolCallStart:
		r.toolCalls.Add(1)
	}
	r.out.Emit(e)
}

// Info returns the run's description with its progress so far.
func (r *Run) Info() Info {
	i := r.info
	i.Step = int(r.step.Load())
	i.ToolCalls = int(r.toolCalls.Load())
	i.Usage = Usage{InputTokens: r.inTokens.Load(), OutputTokens: r.outTokens.Load()}
	i.Usage.TotalTokens = i.Usage.InputTokens + i.Usage.OutputTokens
	r.mu.Lock()
	i.Interrupts = r.interrupts
	r.mu.Unlock()
	i.Status = "running"
	if len(i.Interrupts) > 0 {
		i.Status = "waiting"
	}
	return i
}

// Registry is the set of runs in progress. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	runs   map[string]*Run
	active atomic.Int64
	// idle is closed while no run is in progress; Start replaces it when
	// the first run starts, End closes it when the last one ends.
	idle chan struct{}
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	idle := make(chan struct{})
	close(idle)
	return &Registry{runs: map[string]*Run{}, idle: idle}
}

// Start registers a run described by info whose events go to out. It
// returns the run and a context derived from ctx that its Cancel stops;
// the caller must call End when the run is over. A run id already in
// progress is refused with ErrDuplicate.
func (g *Registry) Start(ctx context.Context, info Info, out events.Sink) (*Run, context.Context, error) {
	if out == nil {
		out = events.Discard
	}
	if info.StartedAt.IsZero() {
		info.StartedAt = time.Now()
	}
	rctx, cancel := context.WithCancelCause(ctx)
	r := &Run{info: info, cancel: cancel, done: make(chan struct{}), out: out}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.runs[info.RunID]; dup {
		cancel(ErrDuplicate)
		return nil, nil, ErrDuplicate
	}
	if len(g.runs) == 0 {
		g.idle = make(chan struct{})
	}
	g.runs[info.RunID] = r
	g.active.Add(1)
	return r, rctx, nil
}

// End removes r from the registry and releases its context.
func (g *Registry) End(r *Run) {
	g.mu.Lock()
	if g.runs[r.info.RunID] == r {
		delete(g.runs, r.info.RunID)
		g.active.Add(-1)
		if len(g.runs) == 0 {
			close(g.idle)
		}
	}
	g.mu.Unlock()
	r.cancel(context.Canceled)
	close(r.done)
}

// Get returns the run in progress with id.
func (g *Registry) Get(id string) (*Run, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.runs[id]
	return r, ok
}

// Cancel stops run id with ErrCancelled. It reports whether the run was in
// progress.
func (g *Registry) Cancel(id string) bool {
	r, ok := g.Get(id)
	if ok {
		r.Cancel(ErrCancelled)
	}
	return ok
}

// List describes the runs in progress, oldest first.
func (g *Registry) List() []Info {
	g.mu.Lock()
	all := slices.Collect(maps.Values(g.runs))
	g.mu.Unlock()
	out := make([]Info, 0, len(all))
	for _, r := range all {
		out = append(out, r.Info())
	}
	SortInfos(out)
	return out
}

// SortInfos orders runs oldest first (then by id).
func SortInfos(out []Info) {
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		if a.RunID < b.RunID {
			return -1
		}
		return 1
	})
}

// Active returns the number of runs in progress.
func (g *Registry) Active() int { return int(g.active.Load()) }

// CancelAll stops every run in progress with cause and returns how many
// there were.
func (g *Registry) CancelAll(cause error) int {
	g.mu.Lock()
	all := slices.Collect(maps.Values(g.runs))
	g.mu.Unlock()
	for _, r := range all {
		r.Cancel(cause)
	}
	return len(all)
}

// Wait blocks until no run is in progress or ctx ends, and reports whether
// every run ended. It returns as soon as the last run ends.
func (g *Registry) Wait(ctx context.Context) bool {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}
