package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/server/chainpool"
	"github.com/ruleagent/ruleagent/sessions"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// Run sources of replays and forks.
const (
	SourceReplay = "replay"
	SourceFork   = "fork"
)

// ErrNotReplayable refuses to replay or fork a run whose record cannot
// reproduce it: an incomplete record, chains that do not build, events
// the log no longer has.
var ErrNotReplayable = errors.New("the run cannot be replayed")

// ReplayOptions configure a replay.
type ReplayOptions struct {
	// ReRunReadOnly runs the read-only built-in tools (read, grep, glob,
	// skill) again instead of answering them from the record: a replay
	// then shows whether what they read has changed.
	ReRunReadOnly bool
	// Sink receives the replay's events as they come (nil: none).
	Sink events.Sink
	// Owner is the verified caller replaying (see RunRequest.Owner).
	Owner string
}

// ReplayReport is how a replay went.
type ReplayReport struct {
	// RunID is the replay's run id, Of the recorded run's.
	RunID string `json:"runId"`
	Of    string `json:"replayOf"`
	// Outcome is how the replay ended (success, error, cancelled, ...).
	Outcome string `json:"outcome"`
	// Same says the replay did what the run did and emitted its events:
	// no divergence, no difference.
	Same bool `json:"same"`
	// Events and RecordedEvents count the replay's and the run's events.
	Events         int `json:"events"`
	RecordedEvents int `json:"recordedEvents"`
	// Divergence is the first LLM or tool call the replay did not make as
	// the run did (the replay stopped there).
	Divergence *Divergence `json:"divergence,omitempty"`
	// Difference is the first event that differs.
	Difference *EventDifference `json:"difference,omitempty"`
}

// Replay runs a recorded run again, on the chains it ran (the record's
// definitions, not those deployed now), answering its LLM calls and its
// tool calls from the record: no model is called and no tool with effects
// runs again. Sub-agents run again (their calls answered in turn), pauses
// are answered as the run's were. It compares the replay's events with
// recorded (the run's, AG-UI JSON) and reports the first divergence and
// difference. A replay is not recorded, and costs nothing in the ledger.
func (s *Store) Replay(ctx context.Context, rec *runrecord.Record, recorded [][]byte, o ReplayOptions) (*ReplayReport, error) {
	if rec.Incomplete != "" {
		return nil, fmt.Errorf("%w: its record is incomplete: %s", ErrNotReplayable, rec.Incomplete)
	}
	req, err := recordedRequest(rec, SourceReplay, o.Owner)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	var got [][]byte
	collect := events.SinkFunc(func(ev events.Event) {
		mu.Lock()
		got = append(got, ev.AppendJSON(nil))
		mu.Unlock()
	})
	// A fork's replay is a fork of the same run, as its events say.
	req.Sink, req.ParentRunID = collect, rec.Meta.ParentRunID
	if o.Sink != nil {
		req.Sink = events.Tee(collect, o.Sink)
	}
	play := newPlayback(rec)
	play.readOnly = o.ReRunReadOnly
	res, err := s.play(ctx, rec, play, req)
	if err != nil && res.RunID == "" {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	rep := &ReplayReport{RunID: req.RunID, Of: rec.Meta.RunID, Outcome: res.Outcome, Events: len(got), RecordedEvents: len(recorded)}
	if rep.Divergence = play.firstDivergence(); rep.Divergence == nil {
		rep.Divergence = play.unused()
	}
	rep.Difference = CompareEvents(recorded, got)
	rep.Same = rep.Divergence == nil && rep.Difference == nil
	return rep, nil
}

// recordedRequest is the request a replay or fork of rec starts with: the
// run's own, on a thread and with a run id of its own.
func recordedRequest(rec *runrecord.Record, source, owner string) (RunRequest, error) {
	caller, err := recordedCallerOf(rec.Request.Caller)
	if err != nil {
		return RunRequest{}, fmt.Errorf("%w: its caller: %v", ErrNotReplayable, err)
	}
	return RunRequest{ChainID: rec.Meta.ChainID, Input: rec.Request.Input, Metadata: maps.Clone(rec.Request.Metadata),
		MsgType: rec.Request.MsgType, Caller: caller, Interruptible: rec.Request.Interruptible, NewThread: rec.Request.NewThread,
		ThreadID: agent.NewID("thread-"), RunID: agent.NewID("run-"), Source: source, Owner: owner}, nil
}

// play runs req on the record's chains with playback p: its first
// segment, then, while p is not live, each pause answered as the record's
// was, through the resume path (a paused run is a checkpoint, and goes on
// from it). It returns at the run's end, or at a pause that goes live (a
// fork's, which its caller answers on the resume routes).
func (s *Store) play(ctx context.Context, rec *runrecord.Record, p *playback, req RunRequest) (RunResult, error) {
	pool, e, err := s.playPool(rec)
	if err != nil {
		return RunResult{}, err
	}
	// The run stops at its first divergence: its client "goes away".
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p.stop = cancel
	// The chains live as long as the run, its pauses included: a fork
	// may pause for a person.
	s.plays.start(req.RunID, &playRun{pool: pool, engine: e, play: p})
	st := newRunState(s, req)
	if err := s.prepare(withPlayback(ctx, p), e, st, nil); err != nil {
		s.plays.ended(req.RunID)
		return RunResult{RunID: req.RunID, ThreadID: req.ThreadID}, err
	}
	seg := st.attach(req.Sink, req.ThreadID, req.RunID)
	st.run.Start(s.newMessage(req))
	res, err := st.wait(ctx, seg)
	for pause := 0; res.Outcome == OutcomeInterrupt && !p.anyLive(); pause++ {
		entries, expired, runID, d := resumeOf(rec, pause, res.Interrupts)
		if d == nil {
			r, rerr := s.claimAnswers(ctx, entries, expired, resumeScope{runID: req.RunID})
			if rerr == nil {
				if runID != "" {
					runID = agent.NewID("run-")
				}
				sink := req.Sink
				if len(entries) == 0 {
					// Nobody answered: the run went on without a client,
					// its events seen by nobody, and so does its replay.
					sink = events.Discard
				}
				res, err = s.goOn(ctx, r, sink, "", runID)
				continue
			}
			d = &Divergence{What: fmt.Sprintf("the answers to pause %d", pause+1), Field: rerr.Error()}
		}
		_ = p.diverge(d)
		// The replay does not go on: nobody answers its pause.
		if cp, _, err := s.paused(ctx, req.RunID); err == nil {
			_ = s.dropPaused(context.WithoutCancel(ctx), cp)
		}
		res.Outcome, res.Interrupts = OutcomeCancelled, nil
		return res, d
	}
	return res, err
}

// resumeOf is the record's answer to pause k, with the ids of the
// interrupts the replay raised there: matched by their tool call (the
// provider's id, after the sub-agent's prefix), else by their place. It
// returns the entries, the interrupts that expired, and the run id the
// answer gave the next segment.
func resumeOf(rec *runrecord.Record, k int, raised []events.Interrupt) ([]ResumeEntry, []string, string, *Divergence) {
	what := fmt.Sprintf("pause %d", k+1)
	if k >= len(rec.Resumes) {
		return nil, nil, "", &Divergence{What: what, Field: "the recorded run was not answered here"}
	}
	r := rec.Resumes[k]
	var entries []ResumeEntry
	if err := json.Unmarshal(r.Entries, &entries); err != nil {
		return nil, nil, "", &Divergence{What: what, Field: "its recorded answers: " + err.Error()}
	}
	if len(r.Interrupts) != len(raised) {
		return nil, nil, "", &Divergence{What: what, Field: "interrupts", Recorded: fmt.Sprint(len(r.Interrupts)), Replayed: fmt.Sprint(len(raised))}
	}
	ids := map[string]string{}
	for i, id := range r.Interrupts {
		ids[id] = raised[i].ID
		if i < len(r.ToolCalls) {
			for _, in := range raised {
				if callSuffix(in.ToolCallID) == callSuffix(r.ToolCalls[i]) {
					ids[id] = in.ID
				}
			}
		}
	}
	for i := range entries {
		id, ok := ids[entries[i].InterruptID]
		if !ok {
			return nil, nil, "", &Divergence{What: what, Field: "an answer to interrupt " + entries[i].InterruptID + ", which the pause did not raise"}
		}
		entries[i].InterruptID = id
	}
	expired := make([]string, 0, len(r.Expired))
	for _, e := range r.Expired {
		id, ok := ids[e]
		if !ok {
			return nil, nil, "", &Divergence{What: what, Field: "interrupt " + e + " expired, which the pause did not raise"}
		}
		expired = append(expired, id)
	}
	return entries, expired, r.RunID, nil
}

// callSuffix is a tool-call id without the sub-agent prefixes events add.
func callSuffix(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// playPool builds the record's chains in a pool of their own, in the order
// they call each other (callees first), without their endpoints, with a
// session store of their own (empty: a replay never touches a real
// session; what the run recalled comes from the record).
func (s *Store) playPool(rec *runrecord.Record) (*chainpool.Pool, types.RuleEngine, error) {
	if _, ok := rec.Chains[rec.Meta.ChainID]; !ok {
		return nil, nil, fmt.Errorf("%w: its record holds no definition of chain %q", ErrNotReplayable, rec.Meta.ChainID)
	}
	cfg := s.cfg
	cfg.Udf = maps.Clone(cfg.Udf)
	components.RegisterSessions(&cfg, sessions.NewMemory())
	p := chainpool.New()
	for _, id := range callOrder(rec.Chains, rec.Meta.ChainID) {
		dsl, err := withoutEndpoints(rec.Chains[id])
		if err == nil {
			var e types.RuleEngine
			if e, err = p.Build(id, dsl, rulego.WithConfig(cfg)); err == nil {
				p.Publish(id, e)
			}
		}
		if err != nil {
			p.Stop()
			return nil, nil, fmt.Errorf("%w: the recorded chain %q does not build here: %v", ErrNotReplayable, id, err)
		}
	}
	s.plays.add(p)
	e, _ := p.Get(rec.Meta.ChainID)
	return p, e, nil
}

// callOrder lists the chains reachable from root, callees before callers.
func callOrder(chains map[string]json.RawMessage, root string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		dsl, ok := chains[id]
		if seen[id] || !ok {
			return
		}
		seen[id] = true
		for _, c := range components.CalledChains(dsl) {
			visit(c)
		}
		out = append(out, id)
	}
	visit(root)
	// Chains the root reaches only through placeholders are built too.
	for _, id := range sortedKeys(chains) {
		visit(id)
	}
	return out
}

// withoutEndpoints drops a chain's endpoints: a replay's chains serve
// nothing.
func withoutEndpoints(dsl json.RawMessage) ([]byte, error) {
	var def map[string]any
	if err := json.Unmarshal(dsl, &def); err != nil {
		return nil, err
	}
	if md, ok := def["metadata"].(map[string]any); ok {
		delete(md, "endpoints")
	}
	return json.Marshal(def)
}

// anyLive reports whether some agent run is answered by the world (a
// fork past its step).
func (p *playback) anyLive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live) > 0
}

// playPools are the pools of the replays and forks in progress, which
// the store stops when it closes, and the runs that play them, by run id:
// a replay or fork that paused goes on with its chains and playback.
type playPools struct {
	mu    sync.Mutex
	pools map[*chainpool.Pool]bool
	runs  map[string]*playRun
	// stopping are the pools of ended runs being stopped.
	stopping sync.WaitGroup
}

// playRun is a replay or fork in progress.
type playRun struct {
	pool   *chainpool.Pool
	engine types.RuleEngine
	play   *playback
	tap    *runTap // its tap in its last segment
}

// seen is a copy of the agent runs its tap has named (nil: none yet).
func (r *playRun) seen() map[string]int {
	if r.tap == nil {
		return nil
	}
	r.tap.mu.Lock()
	defer r.tap.mu.Unlock()
	return maps.Clone(r.tap.seen)
}

func (pp *playPools) add(p *chainpool.Pool) {
	pp.mu.Lock()
	if pp.pools == nil {
		pp.pools = map[*chainpool.Pool]bool{}
	}
	pp.pools[p] = true
	pp.mu.Unlock()
}

// start registers run runID as playing r.
func (pp *playPools) start(runID string, r *playRun) {
	pp.mu.Lock()
	if pp.runs == nil {
		pp.runs = map[string]*playRun{}
	}
	pp.runs[runID] = r
	pp.mu.Unlock()
}

// of is the replay or fork runID is (nil: a run of the deployed chains).
func (pp *playPools) of(runID string) *playRun {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.runs[runID]
}

// setTap records run runID's tap, when it is a replay or fork.
func (pp *playPools) setTap(runID string, t *runTap) {
	pp.mu.Lock()
	if r := pp.runs[runID]; r != nil {
		r.tap = t
	}
	pp.mu.Unlock()
}

// ended stops the chains of run runID, a replay or fork that has ended
// (not paused), in the background: it is called as its chain ends.
func (pp *playPools) ended(runID string) {
	pp.mu.Lock()
	r := pp.runs[runID]
	delete(pp.runs, runID)
	if r != nil {
		delete(pp.pools, r.pool)
	}
	pp.mu.Unlock()
	if r != nil {
		pp.stopping.Go(r.pool.Stop)
	}
}

// stop stops every pool, ending their runs.
func (pp *playPools) stop() {
	pp.mu.Lock()
	all := make([]*chainpool.Pool, 0, len(pp.pools))
	for p := range pp.pools {
		all = append(all, p)
	}
	pp.mu.Unlock()
	for _, p := range all {
		p.Stop()
	}
	pp.stopping.Wait()
}

// runEngine is the engine run runID of chain chainID runs on: its
// replay's or fork's, or the deployed one.
func (s *Store) runEngine(runID, chainID string) (types.RuleEngine, bool) {
	if r := s.plays.of(runID); r != nil {
		return r.engine, true
	}
	return s.Engine(chainID)
}
