package server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/agent"
	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
	"github.com/ruleagent/ruleagent/tools/scrub"
)

// maxNodeSteps bounds the node steps one record keeps.
const maxNodeSteps = 5000

var defaultScrubber = scrub.New()

// runRecorder keeps a run as it goes: its record (the recording its tap
// fills), its events in the event log, and its node steps.
type runRecorder struct {
	s     *Store
	rec   *recording
	log   eventlog.Writer
	nodes *components.NodeLog

	mu  sync.Mutex
	buf []byte
	// evs are the run's events when the recording keeps no event log of
	// its own: the record keeps them itself (see recordingLog).
	evs      []json.RawMessage
	segments int
	resumed  bool // a resume was recorded and its segment not yet seen
	steps    int
	calls    int
	// pend is the record's entry among the records being written, from
	// ending to end.
	pend     *pendingRecord
	in, out  int64
	cost     ledger.Nanos
	currency string
}

// recordRun sets up what a run started by req keeps, and plays (a replay
// or a fork, from ctx): it returns the run's context with its tap, and
// the recorder (nil when the run is not recorded).
func (s *Store) recordRun(ctx, rctx context.Context, st *runState) (context.Context, *runRecorder) {
	req, started := st.req, st.started
	play := playbackFrom(ctx)
	var seen map[string]int
	if pr := s.plays.of(req.RunID); pr != nil {
		// A replay or fork that paused goes on with its playback.
		play, seen = pr.play, pr.seen()
	}
	if play != nil {
		// What the record answers was spent by the recorded run: the
		// ledger prices it for the events, and counts only what goes live.
		if play.fork == nil {
			st.usage.Dry(nil)
		} else {
			st.usage.Dry(func(runID string) bool { return !play.liveRun(runID) })
		}
	}
	recorded := s.recording.Records != nil && (play == nil || play.fork != nil)
	if !recorded {
		if play == nil {
			return rctx, nil
		}
		t := &runTap{play: play, seen: seen}
		s.plays.setTap(req.RunID, t)
		return withTap(rctx, t), nil
	}
	if st.resumed != nil {
		rr, t := s.continueRecord(ctx, st, play)
		if seen != nil {
			t.seen = seen
		}
		s.plays.setTap(req.RunID, t)
		return withTap(components.WithNodeLog(rctx, rr.nodes), t), rr
	}
	meta := runrecord.Meta{RunID: req.RunID, ThreadID: req.ThreadID, ChainID: req.ChainID, UserID: req.Metadata["userId"],
		Source: req.Source, Owner: req.Owner, StartedAt: started.UTC()}
	chains := s.chainDefs(req.ChainID)
	if play != nil {
		meta.ForkedFrom = &runrecord.ForkRef{RunID: play.rec.Meta.RunID, Agent: play.fork.agent, Step: play.fork.step}
		meta.ParentRunID = play.rec.Meta.RunID
		chains = play.rec.Chains
	}
	base := runrecord.Record{Format: runrecord.Format, Meta: meta, Chains: chains, Globals: s.recordedGlobals(),
		Request: runrecord.Request{Input: req.Input, Metadata: req.Metadata, MsgType: req.MsgType,
			Interruptible: req.Interruptible, NewThread: req.NewThread, Caller: callerJSON(req.Caller)}}
	rr := &runRecorder{s: s, rec: newRecording(base, s.recording.MaxBytes), nodes: &components.NodeLog{Max: maxNodeSteps}}
	if l := s.recordingLog(); l != nil {
		w, err := l.Start(ctx, eventlog.Meta{RunID: req.RunID, Owner: s.recording.Replica, ChainID: req.ChainID,
			ThreadID: req.ThreadID, UserID: meta.UserID, Source: req.Source, StartedAt: meta.StartedAt})
		if err != nil {
			s.log.Warn("run events not kept", "run", req.RunID, "err", err)
		} else {
			rr.log = w
		}
	}
	rctx = components.WithNodeLog(rctx, rr.nodes)
	t := &runTap{rec: rr.rec, play: play}
	s.plays.setTap(req.RunID, t)
	return withTap(rctx, t), rr
}

// chainDefs are the definitions a run of chain id uses, exactly as
// deployed: its own and, transitively, those it calls by a fixed id.
func (s *Store) chainDefs(id string) map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]json.RawMessage{}
	todo := []string{id}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		dsl, ok := s.source[c]
		if _, done := out[c]; done || !ok {
			continue
		}
		out[c] = json.RawMessage(dsl)
		todo = append(todo, components.CalledChains(dsl)...)
	}
	return out
}

// recordedGlobals are the chains' ${global.x} values a record keeps: not
// those whose names say they are secret, nor values the scrubber redacts.
func (s *Store) recordedGlobals() map[string]string {
	out := map[string]string{}
	for k, v := range s.cfg.Properties.Values() {
		if secretName(k) || defaultScrubber.Scrub(v) != v {
			out[k] = ""
			continue
		}
		out[k] = v
	}
	return out
}

// secretName reports a name that says its value is a secret.
func secretName(k string) bool {
	k = strings.ToLower(k)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "credential", "auth"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// keepsLog reports whether the run's events go to an event log of the
// recording's own (Recording.Events). A nil recorder keeps none.
func (rr *runRecorder) keepsLog() bool {
	if rr == nil {
		return false
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.log != nil
}

// pauseLog detaches the run's event log when the run pauses (see
// handOverLocked) and returns it, to write what is pending; nil when
// there is none. Whoever goes on with the run continues the log.
func (rr *runRecorder) pauseLog() eventlog.Writer {
	if rr == nil {
		return nil
	}
	rr.mu.Lock()
	defer rr.mu.Unlock()
	w := rr.log
	rr.log = nil
	return w
}

// event keeps one event of the run (segments never overlap: the run's
// lock orders them).
func (rr *runRecorder) event(ev *events.Event) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.log != nil {
		rr.buf = ev.AppendJSON(rr.buf[:0])
		rr.log.Append(rr.buf)
	} else {
		data := ev.AppendJSON(nil)
		rr.rec.mu.Lock()
		if rr.rec.grow(len(data)) {
			rr.evs = append(rr.evs, data)
		}
		rr.rec.mu.Unlock()
	}
	switch ev.Type {
	case events.RunStarted:
		if rr.segments > 0 && rr.resumed {
			rr.resumed = false
			if ev.RunID != rr.rec.rec.Meta.RunID {
				rr.rec.mu.Lock()
				rr.rec.rec.Resumes[len(rr.rec.rec.Resumes)-1].RunID = ev.RunID
				rr.rec.mu.Unlock()
			}
			if rr.log != nil {
				_ = rr.log.SetStatus(context.Background(), eventlog.StatusRunning)
			}
		}
		rr.segments++
	case events.StepFinished:
		if ev.Meta.Step > 0 && ev.Meta.ToolCallID == "" {
			rr.steps++
		}
	case events.ToolCallResult:
		rr.calls++
	case events.RunFinished, events.RunError:
		for _, u := range ev.Usage {
			rr.in += u.InputTokens
			rr.out += u.OutputTokens
		}
		if c, err := ledger.ParseAmount(ev.Meta.Cost); err == nil && ev.Meta.Cost != "" {
			rr.cost += c
			rr.currency = ev.Meta.Currency
		}
		if ev.Outcome == events.OutcomeInterrupt {
			if rr.log != nil {
				_ = rr.log.SetStatus(context.Background(), eventlog.StatusWaiting)
			}
		}
	}
}

// ending says the run is about to end (or pause), before its client can
// hear it: from then on GetRecord and ListRecords wait for its record,
// which end writes.
func (rr *runRecorder) ending() {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	if rr.pend == nil {
		rr.pend = rr.s.pending.add(rr.rec.rec.Meta.RunID)
	}
	rr.mu.Unlock()
}

// end completes the record when the run has ended, and writes it (and
// ends the event log) in the background: the run's client is not kept
// waiting for the store.
func (rr *runRecorder) end(res *RunResult) {
	if rr == nil {
		return
	}
	rr.mu.Lock()
	r := rr.rec
	r.mu.Lock()
	rec := r.rec
	rec.LLMCalls = slices.Clone(rec.LLMCalls)
	unscrubbed := r.unscrubbed
	scrubbers := slices.Clone(r.scrubbers)
	r.mu.Unlock()
	m := &rec.Meta
	m.EndedAt = time.Now().UTC()
	m.Outcome, m.ErrorCode = res.Outcome, res.ErrorCode
	m.Steps, m.ToolCalls, m.LLMCalls = rr.steps, rr.calls, len(rec.LLMCalls)
	m.InputTokens, m.OutputTokens = rr.in, rr.out
	if rr.currency != "" {
		m.Cost, m.Currency = rr.cost.String(), rr.currency
	}
	m.Replayable = rec.Incomplete == ""
	steps, dropped := rr.nodes.Steps()
	for _, st := range steps {
		rec.Nodes = append(rec.Nodes, runrecord.NodeStep{ChainID: st.ChainID, NodeID: st.NodeID, Relation: st.Relation,
			Error: scrubString(st.Error, nil), AtMs: st.At.Sub(r.started).Milliseconds(), DurationMs: st.Duration.Milliseconds()})
	}
	if dropped > 0 {
		s := rr.s
		s.log.Warn("run record: node steps dropped past the bound", "run", m.RunID, "dropped", dropped, "kept", maxNodeSteps)
	}
	rec.Globals = maps.Clone(rec.Globals)
	rec.Events = rr.evs
	log := rr.log
	rr.mu.Unlock()
	s := rr.s
	done := rr.pend
	rr.pend = nil
	if done == nil {
		done = s.pending.add(m.RunID)
	}
	done.rec = &rec
	s.recordWG.Go(func() {
		defer s.pending.remove(m.RunID, done)
		scrubRecord(&rec, scrubbers, unscrubbed)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if log != nil {
			if err := log.End(ctx, m.Outcome); err != nil {
				s.log.Warn("run events: the end not kept", "run", m.RunID, "err", err)
			} else {
				s.keepScrubbedEvents(ctx, &rec, scrubbers)
			}
		}
		if err := s.recording.Records.Put(ctx, &rec); err != nil {
			s.log.Warn("run record not kept", "run", m.RunID, "err", err)
		}
	})
}

// recordedCaller is a run's caller as a record keeps it.
type recordedCaller struct {
	Tools   []agent.ClientTool   `json:"tools,omitempty"`
	Context []agent.ContextEntry `json:"context,omitempty"`
	State   json.RawMessage      `json:"state,omitempty"`
}

func callerJSON(c *agent.Caller) json.RawMessage {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(recordedCaller{Tools: c.Tools, Context: c.Context, State: c.State})
	return b
}

// recordedCallerOf is the caller a record kept (nil for none).
func recordedCallerOf(raw json.RawMessage) (*agent.Caller, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var rc recordedCaller
	if err := json.Unmarshal(raw, &rc); err != nil {
		return nil, err
	}
	return &agent.Caller{Tools: rc.Tools, Context: rc.Context, State: rc.State}, nil
}

// pendingRecords are the records being written, which GetRecord waits
// for (and finds, should the store fail to keep them).
type pendingRecords struct {
	mu sync.Mutex
	m  map[string]*pendingRecord
}

type pendingRecord struct {
	rec  *runrecord.Record
	done chan struct{} // closed once the store has it (or failed to)
}

// add makes run id's record one being written (its rec is set before
// done is closed): a record written again (a paused run's, at its next
// pause or end) is added again once its first write is done, as GetRecord
// waits for it first.
func (p *pendingRecords) add(id string) *pendingRecord {
	pr := &pendingRecord{done: make(chan struct{})}
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string]*pendingRecord{}
	}
	p.m[id] = pr
	p.mu.Unlock()
	return pr
}

func (p *pendingRecords) remove(id string, pr *pendingRecord) {
	p.mu.Lock()
	if p.m[id] == pr {
		delete(p.m, id)
	}
	p.mu.Unlock()
	close(pr.done)
}

// wait waits until the records being written now are written.
func (p *pendingRecords) wait(ctx context.Context) error {
	p.mu.Lock()
	dones := make([]chan struct{}, 0, len(p.m))
	for _, pr := range p.m {
		dones = append(dones, pr.done)
	}
	p.mu.Unlock()
	for _, d := range dones {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// ListRecords lists the records f selects, the runs that have just ended
// included.
func (s *Store) ListRecords(ctx context.Context, f runrecord.Filter) ([]runrecord.Meta, error) {
	if s.recording.Records == nil {
		return nil, runrecord.ErrNotFound
	}
	if err := s.pending.wait(ctx); err != nil {
		return nil, err
	}
	return s.recording.Records.List(ctx, f)
}

// GetRecord returns a run's record. A run that has just ended is waited
// for until its record and events are written (a replay compares them);
// should the store have failed to keep it, the record as it was made is
// returned.
func (s *Store) GetRecord(ctx context.Context, runID string) (*runrecord.Record, error) {
	if s.recording.Records == nil {
		return nil, runrecord.ErrNotFound
	}
	s.pending.mu.Lock()
	pr := s.pending.m[runID]
	s.pending.mu.Unlock()
	if pr != nil {
		select {
		case <-pr.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	rec, err := s.recording.Records.Get(ctx, runID)
	if pr != nil && errors.Is(err, runrecord.ErrNotFound) {
		// A copy through JSON: the caller may change it (an export adds
		// the events), as it may the store's.
		b, err := json.Marshal(pr.rec)
		if err != nil {
			return nil, err
		}
		return runrecord.Decode(b)
	}
	return rec, err
}
