package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ruleagent/ruleagent/events"
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
			if openInterrupt(state, p.Interrupt.ID) != nil {
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
	s.endCancelledLog(ctx, runID, cp.ThreadID)
	s.endPausedRecord(ctx, runID, OutcomeCancelled)
	s.plays.ended(runID)
	return nil
}

// endCancelledLog ends the event log of paused run runID, cancelled (its
// checkpoint is gone): a segment of its own, RUN_STARTED then RUN_FINISHED
// outcome cancelled, as a cancelled run ends, so that a client following
// or rejoining the run gets its end. The log is taken over from whoever
// paused it (the caller deleted the checkpoint under its claim), after the
// last id the pause stored.
func (s *Store) endCancelledLog(ctx context.Context, runID, threadID string) {
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
	now := time.Now().UnixMilli()
	start := events.Event{Type: events.RunStarted, Timestamp: now, ThreadID: threadID, RunID: runID, ProtocolVersion: events.ProtocolVersion}
	b := start.AppendJSON(nil)
	w.Append(b)
	end := events.Event{Type: events.RunFinished, Timestamp: now, ThreadID: threadID, RunID: runID, Outcome: events.OutcomeCancelled}
	w.Append(end.AppendJSON(b[:0]))
	if err := w.End(ctx, OutcomeCancelled); err != nil {
		s.log.Warn("the cancelled paused run's end was not kept in its log", "run", runID, "err", err)
	}
}
