package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/state/eventlog"
	"github.com/ruleagent/ruleagent/state/runrecord"
)

// A paused run is a checkpoint (pause.go), and so is its record: the
// pause writes the record as it is (outcome interrupt) and leaves the
// run's event log open, waiting. The answer goes on with the run, in this
// process or another on the same stores, and with its record: read back
// from the store by the run's id (continueRecord), the answers appended,
// then the rest of the run, written again at its end or next pause.

// continueRecord takes up the record of resumed run st where its pause
// left it, with the answers that resume it. A record the store does not
// have (recording switched on since, or expired) is started afresh and
// says it is incomplete.
func (s *Store) continueRecord(ctx context.Context, st *runState, play *playback) (*runRecorder, *runTap) {
	req := st.req
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	// GetRecord waits for the record the pause is writing, if it is.
	rec, err := s.GetRecord(lctx, req.RunID)
	if err != nil {
		rec = &runrecord.Record{Format: runrecord.Format, Meta: runrecord.Meta{RunID: req.RunID, ThreadID: req.ThreadID, ChainID: req.ChainID,
			UserID: req.Metadata["userId"], Source: req.Source, Owner: req.Owner, StartedAt: st.started.UTC()},
			Chains: s.chainDefs(req.ChainID), Globals: s.recordedGlobals()}
		rec.Incomplete = "the record of the run before its pause was not found (" + err.Error() + "): it cannot be replayed"
	}
	rr := &runRecorder{s: s, rec: resumeRecording(rec, s.recording.MaxBytes), nodes: &components.NodeLog{Max: maxNodeSteps},
		segments: 1, resumed: true}
	m := &rec.Meta
	rr.steps, rr.calls, rr.in, rr.out = m.Steps, m.ToolCalls, m.InputTokens, m.OutputTokens
	if c, err := ledger.ParseAmount(m.Cost); err == nil && m.Cost != "" {
		rr.cost, rr.currency = c, m.Currency
	}
	var p runrecord.Resume
	for _, pd := range st.resumed.Pending {
		p.Interrupts = append(p.Interrupts, pd.Interrupt.ID)
		p.ToolCalls = append(p.ToolCalls, pd.Interrupt.ToolCallID)
	}
	p.Expired = st.expired
	entries := st.entries
	if entries == nil {
		entries = []ResumeEntry{}
	}
	rr.rec.resumed(p, entries)
	rr.evs = slices.Clone(rec.Events)
	if l := s.recordingLog(); l != nil {
		// This process holds the run's checkpoint claim, and takes its
		// log over (the pause detached it: handOverLocked).
		w, err := l.Continue(lctx, req.RunID, "", s.recording.Replica)
		if err != nil {
			s.log.Warn("run events not kept", "run", req.RunID, "err", err)
		} else {
			rr.log = w
		}
	}
	t := &runTap{rec: rr.rec, play: play}
	t.restoreSeen(rec.Agents)
	return rr, t
}

// resumeRecording is a recording that goes on from rec: its tables, its
// size, and how many LLM attempts each agent run made.
func resumeRecording(rec *runrecord.Record, max int) *recording {
	r := newRecording(*rec, max)
	for i, m := range rec.Messages {
		r.msgs[string(m)] = i
		r.size += len(m)
	}
	for i, t := range rec.Tools {
		r.tools[string(t)] = i
		r.size += len(t)
	}
	for _, c := range rec.LLMCalls {
		r.seq[c.Agent] = max2(r.seq[c.Agent], c.Seq+1)
		r.size += len(c.Request.Fields) + len(c.Response.Body) + len(c.Response.BodyBytes) + len(c.Response.Error)
	}
	for _, c := range rec.ToolCalls {
		r.size += len(c.Args) + len(c.Error)
		if c.Result != nil {
			r.size += len(c.Result.Text) + len(c.Result.Parts) + len(c.Result.Structured)
		}
		for _, e := range c.Events {
			r.size += len(e)
		}
	}
	for _, m := range rec.Memory {
		r.size += len(m.Messages) + len(m.Error)
		for _, e := range m.Events {
			r.size += len(e)
		}
	}
	return r
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// restoreSeen counts the agent runs a record names, so that an agent run
// that starts after the pause gets the key it got when the run went on
// in one piece (see StartAgent).
func (t *runTap) restoreSeen(agents []runrecord.Agent) {
	if len(agents) == 0 {
		return
	}
	if t.seen == nil {
		t.seen = map[string]int{}
	}
	for _, a := range agents {
		base, n := a.Key, 1
		if i := strings.LastIndexByte(a.Key, '#'); i >= 0 {
			if k, err := strconv.Atoi(a.Key[i+1:]); err == nil {
				base, n = a.Key[:i], k
			}
		}
		t.seen[base] = max2(t.seen[base], n)
	}
}

// endPausedRecord ends the record of paused run runID that will not go
// on (it was cancelled): its outcome, and its events with end, the
// segment that ends it (in its event log, or the record's own events).
func (s *Store) endPausedRecord(ctx context.Context, runID, outcome string, end []events.Event) {
	if s.recording.Records == nil {
		return
	}
	var w eventlog.Writer
	if l := s.recordingLog(); l != nil {
		var err error
		if w, err = l.Continue(ctx, runID, "", s.recording.Replica); err != nil && !errors.Is(err, eventlog.ErrNotFound) {
			s.log.Warn("run events: the end not kept", "run", runID, "err", err)
		}
	}
	if w != nil {
		appendEvents(w, end)
		if err := w.End(ctx, outcome); err != nil {
			s.log.Warn("run events: the end not kept", "run", runID, "err", err)
		}
	}
	rec, err := s.GetRecord(ctx, runID)
	if err != nil {
		return
	}
	rec.Meta.Outcome, rec.Meta.EndedAt = outcome, time.Now().UTC()
	if s.recordingLog() == nil {
		for i := range end {
			rec.Events = append(rec.Events, end[i].AppendJSON(nil))
		}
	}
	if err := s.recording.Records.Put(ctx, rec); err != nil {
		s.log.Warn("run record not kept", "run", runID, "err", err)
	}
}

// recordingLog is the event log the recording writes its runs' events
// to, Recording.Events, when the store keeps no run log of its own (nil
// otherwise). A store with a run log (StoreOptions.RunLog, as serve has)
// writes every run's events there, with ids and for its own retention; a
// run's record then keeps its events itself, for as long as the record
// is kept.
func (s *Store) recordingLog() eventlog.Log {
	if s.rl != nil {
		return nil
	}
	return s.recording.Events
}
