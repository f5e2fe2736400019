package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/ruleagent/ruleagent/metrics"
	"github.com/ruleagent/ruleagent/server/identity"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/checkpoint"
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
	s.endPausedRecord(ctx, runID, OutcomeCancelled)
	s.plays.ended(runID)
	return nil
}
