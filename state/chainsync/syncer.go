package chainsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/state/health"
)

// Applier deploys chains on this replica (the server's engine pool).
type Applier interface {
	// Apply deploys c, replacing any running version of c.ID. An error
	// leaves the running version (if any) in place: the Syncer reports the
	// chain as not applied.
	Apply(ctx context.Context, c Chain) error
	// Remove undeploys chain id.
	Remove(ctx context.Context, id string) error
}

// State is a chain as this replica runs it, against the store.
type State struct {
	ID string `json:"id"`
	// Version and Hash are the store's; Applied the version running here
	// (0: none).
	Version int64  `json:"version"`
	Hash    string `json:"hash"`
	Applied int64  `json:"applied"`
	// Err is why the store's version is not running here.
	Err string `json:"error,omitempty"`
}

// Syncer keeps a replica's chains equal to a Store's.
type Syncer struct {
	store Store
	apply Applier
	link  *health.Link
	// missing, when set, is told the chains this replica runs that the
	// store has no record of, not even a tombstone (SetMissing).
	missing func(ctx context.Context, ids []string)

	mu       sync.Mutex
	chains   map[string]*State
	caughtUp bool
}

// NewSyncer returns a syncer of store into apply; Run starts it.
func NewSyncer(store Store, apply Applier) *Syncer {
	return &Syncer{store: store, apply: apply, link: health.NewLink("chain sync"), chains: map[string]*State{}}
}

// SetMissing sets what is told, at each reconciliation, the chains this
// replica runs that the store has no record of (a Redis restarted
// without persistence lost them): a server puts them back. Call it
// before Run.
func (s *Syncer) SetMissing(fn func(ctx context.Context, ids []string)) { s.missing = fn }

// Run lists the store and applies what differs, then follows its
// changes, until ctx ends. After any error of the store, or a gap in its
// revisions, it lists and reconciles again (after a pause that grows to a
// second).
func (s *Syncer) Run(ctx context.Context) {
	pause := 50 * time.Millisecond
	for ctx.Err() == nil {
		rev, err := s.store.Rev(ctx)
		if err == nil {
			err = s.reconcile(ctx)
		}
		if err == nil {
			s.link.Up()
			pause = 50 * time.Millisecond
			err = s.follow(ctx, rev)
		}
		if ctx.Err() != nil {
			return
		}
		s.link.Down(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

// errGap stops following: the feed skipped revisions.
var errGap = errors.New("chain changes were missed: listing the store again")

func (s *Syncer) follow(ctx context.Context, rev int64) error {
	for c, err := range s.store.Changes(ctx, rev) {
		if err != nil {
			return err
		}
		if c.Rev != rev+1 {
			return fmt.Errorf("%w (revision %d after %d)", errGap, c.Rev, rev)
		}
		rev = c.Rev
		s.change(ctx, c)
	}
	return nil
}

// change applies one change, unless this replica already runs that
// content (versions alone could mislead: a store that lost its data
// numbers again from 1).
func (s *Syncer) change(ctx context.Context, c Change) {
	s.mu.Lock()
	st := s.chains[c.ID]
	running := st != nil && st.Applied > 0 && st.Err == ""
	same := running && st.Hash == c.Hash
	s.mu.Unlock()
	switch {
	case c.Deleted && !running:
		s.record(c.ID, c.Version, "", nil)
		return
	case c.Deleted:
		s.remove(ctx, c.ID, c.Version)
		return
	case same:
		s.mu.Lock()
		st.Version = c.Version
		s.mu.Unlock()
		return
	}
	ch, err := s.store.Get(ctx, c.ID)
	if err != nil {
		s.record(c.ID, c.Version, c.Hash, err)
		return
	}
	s.deploy(ctx, ch)
}

// reconcile lists the store and applies every difference.
func (s *Syncer) reconcile(ctx context.Context) error {
	list, err := s.store.List(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, c := range list {
		seen[c.ID] = true
		s.mu.Lock()
		st := s.chains[c.ID]
		s.mu.Unlock()
		switch {
		case c.Deleted && (st == nil || st.Applied == 0):
			s.record(c.ID, c.Version, "", nil)
		case c.Deleted:
			s.remove(ctx, c.ID, c.Version)
		case st == nil || st.Hash != c.Hash || st.Applied == 0 || st.Err != "":
			s.deploy(ctx, c)
		default:
			s.record(c.ID, c.Version, c.Hash, nil)
		}
	}
	s.mu.Lock()
	var gone []string
	for id, st := range s.chains {
		if !seen[id] && st.Applied > 0 {
			gone = append(gone, id)
		}
	}
	s.mu.Unlock()
	if len(gone) > 0 && s.missing != nil {
		slices.Sort(gone)
		s.missing(ctx, gone)
	}
	for _, id := range gone {
		// A store that lost it (a Redis restarted empty) does not undeploy
		// it silently: it is reported, and runs on.
		s.record(id, 0, "", errors.New("the chain is not in the store (lost?): it keeps running here; deploy it again"))
	}
	s.mu.Lock()
	s.caughtUp = true
	s.mu.Unlock()
	return nil
}

func (s *Syncer) deploy(ctx context.Context, c Chain) {
	err := s.apply.Apply(ctx, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(c.ID)
	st.Version, st.Hash = c.Version, c.Hash
	if err != nil {
		st.Err = err.Error()
		return
	}
	st.Applied, st.Err = c.Version, ""
}

func (s *Syncer) remove(ctx context.Context, id string, version int64) {
	err := s.apply.Remove(ctx, id)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(id)
	st.Version, st.Hash = version, ""
	if err != nil {
		st.Err = err.Error()
		return
	}
	st.Applied, st.Err = 0, ""
}

func (s *Syncer) record(id string, version int64, hash string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.state(id)
	st.Version, st.Hash, st.Err = version, hash, ""
	if err != nil {
		st.Err = err.Error()
	}
}

// state returns id's state, creating it; the caller holds mu.
func (s *Syncer) state(id string) *State {
	st := s.chains[id]
	if st == nil {
		st = &State{ID: id}
		s.chains[id] = st
	}
	return st
}

// States returns every chain's state, by id.
func (s *Syncer) States() []State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]State, 0, len(s.chains))
	for _, id := range slices.Sorted(maps.Keys(s.chains)) {
		out = append(out, *s.chains[id])
	}
	return out
}

// CaughtUp reports whether the first reconciliation is done.
func (s *Syncer) CaughtUp() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caughtUp
}

// FollowProbe is whether the Syncer has caught up with the store and
// follows it (its feed works); unlike Probe, chains that failed to deploy
// here do not fail it.
func (s *Syncer) FollowProbe() health.Probe {
	return health.ProbeFunc(func(ctx context.Context) health.Check {
		c := s.link.Check(ctx)
		if !s.CaughtUp() {
			c.OK, c.Detail = false, "catching up with the chain store"
		}
		return c
	})
}

// Probe is the Syncer's readiness: caught up, following the store, and
// every chain of the store running here.
func (s *Syncer) Probe() health.Probe {
	return health.ProbeFunc(func(ctx context.Context) health.Check {
		c := s.link.Check(ctx)
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.caughtUp {
			c.OK, c.Detail = false, "catching up with the chain store"
			return c
		}
		var bad []string
		for _, id := range slices.Sorted(maps.Keys(s.chains)) {
			if st := s.chains[id]; st.Err != "" {
				bad = append(bad, fmt.Sprintf("%s (store version %d, running %d): %s", id, st.Version, st.Applied, st.Err))
			}
		}
		if len(bad) > 0 {
			c.OK = false
			c.Detail = strings.TrimSpace(c.Detail + " chains differing from the store: " + strings.Join(bad, "; "))
		}
		return c
	})
}
