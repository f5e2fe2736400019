package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/catalog"

	"github.com/ruleagent/ruleagent/state/chainsync"
	"github.com/ruleagent/ruleagent/state/health"
)

// The chains of a fleet (StoreOptions.Chains): a chain saved or deleted
// on any replica is written to the fleet's chain store (package
// state/chainsync), and every replica's Syncer deploys it, the writing
// one included, through the same validation as a save here (the
// operator's sandbox floor and policies are this replica's). A chain
// that one replica refuses keeps its previous version there (or none)
// and is reported: in its log, in /readyz and /healthz (check "chains"),
// and in GET /api/v1/chains (its "fleet" status), never silently
// different.

// ErrChainStore wraps a failure of the fleet's chain store (Redis down):
// the chain was neither saved nor deleted.
var ErrChainStore = errors.New("the fleet's chain store failed")

// applyWait bounds how long a save waits for this replica to deploy
// what it wrote to the fleet's store (the Syncer does it within
// milliseconds while the store answers).
const applyWait = 10 * time.Second

// FleetChain is a chain's state against the fleet's chain store (see package catalog).
type FleetChain = catalog.FleetChain

// fleetChains is the store's side of chain sync: what it applied, for
// the saves waiting on it.
type fleetChains struct {
	store   chainsync.Store
	sync    *chainsync.Syncer
	replica string

	mu      sync.Mutex
	applied map[string]applyResult
	wake    chan struct{} // closed and replaced at each result
}

// applyResult is the last change of a chain this replica applied.
type applyResult struct {
	version int64
	err     error
}

func newFleetChains(s *Store, cs chainsync.Store, replica string) *fleetChains {
	f := &fleetChains{store: cs, replica: replica, applied: map[string]applyResult{}, wake: make(chan struct{})}
	f.sync = chainsync.NewSyncer(cs, fleetApplier{s: s, f: f})
	f.sync.SetMissing(s.restoreChains)
	return f
}

func (f *fleetChains) record(id string, version int64, err error) {
	f.mu.Lock()
	f.applied[id] = applyResult{version: version, err: err}
	close(f.wake)
	f.wake = make(chan struct{})
	f.mu.Unlock()
}

// await waits until this replica has applied version (or a later one)
// of chain id, and returns that application's error.
func (f *fleetChains) await(ctx context.Context, id string, version int64) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, applyWait)
	defer cancel()
	for {
		f.mu.Lock()
		r, ok := f.applied[id]
		wake := f.wake
		f.mu.Unlock()
		if ok && r.version >= version {
			return true, r.err
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-wake:
		}
	}
}

// state returns chain id's state against the store.
func (f *fleetChains) state(id string) (FleetChain, bool) {
	for _, st := range f.sync.States() {
		if st.ID == id {
			return FleetChain{Version: st.Version, Applied: st.Applied, Hash: st.Hash, Error: st.Err}, true
		}
	}
	return FleetChain{}, false
}

// fleetApplier deploys the store's chains on this replica.
type fleetApplier struct {
	s *Store
	f *fleetChains
}

// Apply implements chainsync.Applier: the chain is validated and
// deployed exactly as a save here would (the replica's own floors).
func (a fleetApplier) Apply(_ context.Context, c chainsync.Chain) error {
	s := a.s
	s.saveMu.Lock()
	id, dsl, problems, warnings := s.validate(c.ID, c.DSL, "", false)
	var err error
	switch {
	case id != c.ID:
		err = &InvalidChainError{ID: c.ID, Problems: []Problem{{Path: "ruleChain.id", Message: fmt.Sprintf("is %q, but the chain is stored as %q", id, c.ID)}}}
	case len(problems) > 0:
		err = &InvalidChainError{ID: id, Problems: problems, Warnings: warnings}
	default:
		if derr := s.deploy(id, dsl); derr != nil {
			err = refusal(id, derr, warnings)
		}
	}
	s.saveMu.Unlock()
	a.f.record(c.ID, c.Version, err)
	if err != nil {
		s.log.Error("chain from the fleet's chain store refused here: this replica runs its previous version (or none) until it is fixed",
			"chain", c.ID, "version", c.Version, "by", c.UpdatedBy, "err", err)
		return err
	}
	s.log.Info("chain deployed from the fleet's chain store", "chain", c.ID, "version", c.Version, "by", c.UpdatedBy)
	return nil
}

// Remove implements chainsync.Applier.
func (a fleetApplier) Remove(ctx context.Context, id string) error {
	s := a.s
	s.saveMu.Lock()
	s.undeploy(id)
	s.saveMu.Unlock()
	version := int64(0)
	if c, err := a.f.store.Get(ctx, id); err == nil {
		version = c.Version
	}
	a.f.record(id, version, nil)
	s.log.Info("chain removed by the fleet's chain store", "chain", id)
	return nil
}

// restoreChains puts back into the store the chains this replica runs
// that it has no record of: a Redis restarted without persistence came
// back empty. The first replica to put a chain back wins; deleted chains
// are not running anywhere, so they stay deleted.
func (s *Store) restoreChains(ctx context.Context, ids []string) {
	f := s.fleet
	for _, id := range ids {
		dsl, ok := s.DSL(id)
		if !ok {
			continue
		}
		_, err := f.store.Put(ctx, id, dsl, 0, f.replica)
		switch {
		case errors.Is(err, chainsync.ErrConflict):
		case err != nil:
			s.log.Warn("the fleet's chain store lost a chain this replica runs; putting it back failed", "chain", id, "err", err)
		default:
			s.log.Warn("the fleet's chain store had lost a chain this replica runs (a Redis restarted without persistence?): put back", "chain", id)
		}
	}
}

// SyncChains keeps this replica's chains equal to the fleet's chain
// store until ctx ends: it lists the store and deploys what differs, then
// follows its changes. It returns at once on a store without a fleet.
func (s *Store) SyncChains(ctx context.Context) {
	if s.fleet != nil {
		s.fleet.sync.Run(ctx)
	}
}

// ChainProbes are the readiness of chain sync: sync is ready once the
// first reconciliation is done and while the store's changes are followed;
// chains is not ok while chains of the store are not running here as
// stored (it is reported, and does not make the replica unready: the
// replica serves its other chains). Both are nil on a store without a
// fleet.
func (s *Store) ChainProbes() (sync, chains health.Probe) {
	if s.fleet == nil {
		return nil, nil
	}
	return s.fleet.sync.FollowProbe(), health.ProbeFunc(func(context.Context) health.Check {
		c := health.Check{Name: "chains", OK: true}
		var bad []string
		for _, st := range s.fleet.sync.States() {
			if st.Err != "" {
				bad = append(bad, fmt.Sprintf("%s (store version %d, running %d): %s", st.ID, st.Version, st.Applied, firstLine(st.Err)))
			}
		}
		if len(bad) > 0 {
			c.OK = false
			c.Detail = "chains differing from the fleet's chain store: " + strings.Join(bad, "; ")
		}
		return c
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// saveToFleet is SaveFrom on a fleet: validated here, written to the
// fleet's store, then deployed by every replica's Syncer; it answers once
// this replica has deployed it. A chain this replica refuses at deploy
// (what validation cannot see, such as an endpoint's port in use) is
// refused, and the store is set back to what it held.
func (s *Store) saveToFleet(ctx context.Context, id string, dsl []byte) (ChainInfo, error) {
	f := s.fleet
	id, dsl, problems, warnings := s.validate(id, dsl, "", false)
	if len(problems) == 0 {
		problems = s.savedBy(ctx, dsl)
	}
	if len(problems) > 0 {
		return ChainInfo{}, &InvalidChainError{ID: id, Problems: problems, Warnings: warnings}
	}
	info, err := Describe(dsl)
	if err != nil {
		return ChainInfo{}, err
	}
	prev, perr := f.store.Get(ctx, id)
	if perr != nil && !errors.Is(perr, chainsync.ErrNotFound) {
		return ChainInfo{}, fmt.Errorf("%w: %w", ErrChainStore, perr)
	}
	c, err := f.store.Put(ctx, id, dsl, chainsync.AnyVersion, f.replica)
	if err != nil {
		return ChainInfo{}, fmt.Errorf("%w: %w", ErrChainStore, err)
	}
	info.ID, info.Warnings = id, warnings
	if perr == nil && c.Version == prev.Version {
		// The store held this DSL already: no change goes out.
		if running, ok := s.DSL(id); ok && chainsync.Hash(running) == c.Hash {
			info.Fleet = s.fleetState(id)
			return info, nil
		}
		if st, ok := f.state(id); ok && st.Error != "" {
			return ChainInfo{}, &InvalidChainError{ID: id, Problems: []Problem{{Message: st.Error}}, Warnings: warnings}
		}
	}
	done, aerr := f.await(ctx, id, c.Version)
	if aerr != nil {
		s.rollback(ctx, id, prev, perr == nil, c.Version)
		return ChainInfo{}, refusal(id, aerr, warnings)
	}
	info.Fleet = &FleetChain{Version: c.Version, Applied: c.Version, Hash: c.Hash}
	if !done {
		s.log.Warn("chain saved to the fleet's chain store, not yet deployed here", "chain", id, "version", c.Version)
		info.Fleet = s.fleetState(id)
	}
	return info, nil
}

// rollback sets chain id in the store back to prev (or deletes it when
// there was none), unless it changed again since version.
func (s *Store) rollback(ctx context.Context, id string, prev chainsync.Chain, had bool, version int64) {
	var err error
	if had && !prev.Deleted {
		_, err = s.fleet.store.Put(ctx, id, prev.DSL, version, s.fleet.replica)
	} else {
		err = s.fleet.store.Delete(ctx, id, version, s.fleet.replica)
	}
	if err != nil && !errors.Is(err, chainsync.ErrConflict) {
		s.log.Error("a chain this replica refused stays in the fleet's chain store: setting it back failed", "chain", id, "err", err)
	}
}

// deleteFromFleet is Delete on a fleet: a tombstone in the store, then
// every replica's Syncer undeploys it; it answers once this replica has.
func (s *Store) deleteFromFleet(ctx context.Context, id string) error {
	f := s.fleet
	err := f.store.Delete(ctx, id, chainsync.AnyVersion, f.replica)
	switch {
	case errors.Is(err, chainsync.ErrNotFound):
		return fmt.Errorf("%w: %q", ErrNoChain, id)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrChainStore, err)
	}
	if _, running := s.pool.Get(id); !running {
		return nil
	}
	if c, err := f.store.Get(ctx, id); err == nil {
		f.await(ctx, id, c.Version)
	}
	return nil
}

// fleetState is chain id's state against the fleet's store (nil without
// a fleet).
func (s *Store) fleetState(id string) *FleetChain {
	if s.fleet == nil {
		return nil
	}
	if st, ok := s.fleet.state(id); ok {
		return &st
	}
	return nil
}

// fleetOnly lists the chains of the fleet's store that do not run here:
// refused (Error says why) or not yet deployed.
func (s *Store) fleetOnly() []ChainInfo {
	if s.fleet == nil {
		return nil
	}
	deployed := map[string]bool{}
	for _, id := range s.pool.IDs() {
		deployed[id] = true
	}
	byID := map[string]chainsync.State{}
	for _, st := range s.fleet.sync.States() {
		if !deployed[st.ID] && st.Hash != "" {
			byID[st.ID] = st
		}
	}
	var out []ChainInfo
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		st := byID[id]
		out = append(out, ChainInfo{ID: id, Error: st.Err,
			Fleet: &FleetChain{Version: st.Version, Applied: st.Applied, Hash: st.Hash, Error: st.Err}})
	}
	return out
}
