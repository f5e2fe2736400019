package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/eventlog"
)

// threadWaits reports whether a run of thread, started by owner, is paused
// waiting for answers: new input on the thread must answer them first.
func (s *Store) threadWaits(ctx context.Context, owner, thread string) bool {
	list, err := s.checkpoints.List(ctx)
	if err != nil {
		return false
	}
	for _, c := range list {
		if c.ThreadID == thread && c.Owner == owner {
			return true
		}
	}
	return false
}

// pausedRuns describes the paused runs p may see, as the runs listing
// shows them (status waiting, with their interrupts).
func (s *Store) pausedRuns(ctx context.Context, p identity.Principal) ([]runs.Info, error) {
	list, err := s.checkpoints.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errCheckpoints, err)
	}
	var out []runs.Info
	for _, c := range list {
		if !identity.MayAct(p, c.Owner) {
			continue
		}
		_, state, err := s.paused(ctx, c.RunID)
		if err != nil {
			continue
		}
		info := runs.Info{RunID: state.RunID, ThreadID: state.ThreadID, ChainID: state.ChainID, Source: state.Source, User: state.Owner,
			StartedAt: state.StartedAt, Status: "waiting"}
		for _, u := range state.Usage {
			info.Usage.InputTokens += u.InputTokens
			info.Usage.OutputTokens += u.OutputTokens
		}
		info.Usage.TotalTokens = info.Usage.InputTokens + info.Usage.OutputTokens
		for _, p := range state.Pending {
			if state.Open(p.Interrupt.ID) != nil {
				info.Interrupts = append(info.Interrupts, p.Interrupt)
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// cancelPaused cancels paused run runID for p: its checkpoint is claimed
// and deleted, so nobody can answer it any more. It reports
// checkpoint.ErrNotFound when no such run is paused.
func (s *Store) cancelPaused(ctx context.Context, runID string, p identity.Principal) error {
	cp, state, err := s.paused(ctx, runID)
	if err != nil {
		return err
	}
	if !identity.MayAct(p, state.Owner) {
		return ErrNotYours
	}
	if err := s.dropPaused(ctx, cp); err != nil {
		return err
	}
	s.log.Info("run", "run", runID, "thread", state.ThreadID, "chain", state.ChainID, "source", state.Source, "outcome", OutcomeCancelled,
		"paused", true)
	metrics.ChainRuns.WithLabelValues(state.ChainID, cmp.Or(state.Source, "api"), OutcomeCancelled).Inc()
	return nil
}

// dropPaused claims paused run cp and deletes it, so that nobody can
// answer it any more; its record ends cancelled. It reports
// checkpoint.ErrNotFound when the run is no longer paused as cp.
func (s *Store) dropPaused(ctx context.Context, cp *checkpoint.Checkpoint) error {
	runID := cp.RunID
	claimed, err := s.checkpoints.Claim(ctx, runID, s.replica)
	if err != nil {
		if errors.Is(err, checkpoint.ErrClaimed) {
			// Being answered: the run goes on, it is cancelled there.
			return fmt.Errorf("%w: %v", runs.ErrDuplicate, err)
		}
		return err
	}
	if string(claimed.Data) != string(cp.Data) {
		_ = s.checkpoints.Release(ctx, runID, claimed.Fence)
		return checkpoint.ErrNotFound
	}
	if err := s.checkpoints.Delete(ctx, runID, claimed.Fence); err != nil {
		return err
	}
	s.expiry.stop(runID)
	state, _ := checkpoint.Decode(cp.Data)
	end := s.cancelledEnd(cp, state)
	s.endCancelledLog(ctx, runID, end)
	s.endPausedRecord(ctx, runID, OutcomeCancelled, end)
	s.plays.ended(runID)
	return nil
}

// cancelledEnd is the segment that ends paused run cp (state, nil when it
// does not decode) cancelled, as a live run's cancellation ends: a
// RUN_STARTED, then RUN_FINISHED outcome cancelled with the run's usage
// up to its pause (every segment's: what its checkpoint keeps; nothing
// was spent since), its duration since it started, and the cost of that
// usage at the server's prices.
func (s *Store) cancelledEnd(cp *checkpoint.Checkpoint, state *checkpoint.State) []events.Event {
	now := time.Now()
	ms := now.UnixMilli()
	start := events.Event{Type: events.RunStarted, Timestamp: ms, ThreadID: cp.ThreadID, RunID: cp.RunID, ProtocolVersion: events.ProtocolVersion}
	end := events.Event{Type: events.RunFinished, Timestamp: ms, ThreadID: cp.ThreadID, RunID: cp.RunID, Outcome: events.OutcomeCancelled}
	if state != nil {
		end.Usage = state.Usage
		end.Meta.DurationMs = now.Sub(state.StartedAt).Milliseconds()
		end.Meta.Cost, end.Meta.Currency = s.usageCost(state.Usage)
	}
	return []events.Event{start, end}
}

// usageCost is what usage costs at the usage ledger's prices, and the
// currency; empty when none of it has a price (or there are none).
func (s *Store) usageCost(usage []events.TokenUsage) (cost, currency string) {
	if s.ledger == nil || s.ledger.Prices() == nil {
		return "", ""
	}
	prices := s.ledger.Prices()
	var total ledger.Nanos
	priced := false
	for _, u := range usage {
		if p := prices.Lookup(u.Provider, u.Model); p != nil {
			total += p.Cost(aspects.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
				ReasoningTokens: u.ReasoningTokens, CachedTokens: u.CachedInputTokens})
			priced = true
		}
	}
	if !priced {
		return "", ""
	}
	return total.String(), s.ledger.Currency()
}

// endCancelledLog ends the event log of paused run runID, cancelled (its
// checkpoint is gone), with the segment end (cancelledEnd), so that a
// client following or rejoining the run gets its end. The log is taken
// over from whoever paused it (the caller deleted the checkpoint under
// its claim), after the last id the pause stored.
func (s *Store) endCancelledLog(ctx context.Context, runID string, end []events.Event) {
	rl := s.rl
	if rl == nil {
		return
	}
	w, err := rl.Events.Continue(ctx, runID, "", rl.Replica)
	if err != nil {
		if !errors.Is(err, eventlog.ErrNotFound) && !errors.Is(err, eventlog.ErrEnded) {
			s.log.Warn("the cancelled paused run's end was not kept in its log", "run", runID, "err", err)
		}
		return
	}
	appendEvents(w, end)
	if err := w.End(ctx, OutcomeCancelled); err != nil {
		s.log.Warn("the cancelled paused run's end was not kept in its log", "run", runID, "err", err)
	}
}

// appendEvents appends evs to a run's log.
func appendEvents(w eventlog.Writer, evs []events.Event) {
	var b []byte
	for i := range evs {
		b = evs[i].AppendJSON(b[:0])
		w.Append(b)
	}
}
