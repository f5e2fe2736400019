// Package chainpool is the chain store's RuleGo engine pool: chain ids to
// engines, where deploying a new version swaps engines without disturbing
// the runs in flight (see Pool).
package chainpool

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ruleagent/ruleagent/server/catalog"
	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/engine"
)

// Pool is a store's RuleGo engine pool (types.RuleEnginePool): chain
// ids to engines, with a replace that never disturbs a run in flight.
//
// RuleGo's own pool reloads a chain in place (ReloadSelf): new messages
// wait, it waits up to 10 s for the running ones, then destroys the old
// nodes under any run still going (an agent run easily lasts minutes). Here
// a new version is built as a separate engine and swapped in: new runs get
// it at once, and the old engine is retired, stopped only once its runs
// have finished (or after retireGrace, when they are cancelled).
type Pool struct {
	mu      sync.RWMutex
	engines map[string]types.RuleEngine
	// retiring holds the old engines still finishing runs.
	retiring   map[types.RuleEngine]bool
	retireDone sync.WaitGroup
	grace      time.Duration
	// building holds New's builds in progress, by chain id: a concurrent
	// New of the same chain waits for it instead of building its own.
	building map[string]*poolBuild
}

// poolBuild is one build by New; e and err are set when done is closed.
type poolBuild struct {
	done chan struct{}
	e    types.RuleEngine
	err  error
}

// retireGrace is how long a replaced or deleted chain's runs may go on
// before they are cancelled (the default run timeout is 10 minutes).
const retireGrace = 15 * time.Minute

// New returns an empty pool.
func New() *Pool {
	return &Pool{engines: map[string]types.RuleEngine{}, retiring: map[types.RuleEngine]bool{}, grace: retireGrace,
		building: map[string]*poolBuild{}}
}

// Build makes a new engine for id without publishing it.
func (p *Pool) Build(id string, dsl []byte, opts ...types.RuleEngineOption) (types.RuleEngine, error) {
	opts = append(opts, types.WithRuleEnginePool(p))
	return engine.NewRuleEngine(id, dsl, opts...)
}

// Swap builds chain id from dsl and publishes it, retiring the version it
// replaces. If the build fails, nothing changes.
func (p *Pool) Swap(id string, dsl []byte, opts ...types.RuleEngineOption) (types.RuleEngine, error) {
	e, err := p.Build(id, dsl, opts...)
	if err != nil {
		return nil, err
	}
	p.Publish(id, e)
	return e, nil
}

// Publish makes e chain id's engine, retiring the version it replaces.
func (p *Pool) Publish(id string, e types.RuleEngine) {
	p.mu.Lock()
	old := p.engines[id]
	p.engines[id] = e
	p.mu.Unlock()
	p.retire(old)
}

// Remove unpublishes chain id and retires it. It reports whether it existed.
func (p *Pool) Remove(id string) bool {
	p.mu.Lock()
	old, ok := p.engines[id]
	delete(p.engines, id)
	p.mu.Unlock()
	p.retire(old)
	return ok
}

// retire stops e in the background once its runs have ended, cancelling
// them after the grace period.
func (p *Pool) retire(e types.RuleEngine) {
	if e == nil {
		return
	}
	p.mu.Lock()
	p.retiring[e] = true
	p.mu.Unlock()
	p.retireDone.Add(1)
	go func() {
		defer p.retireDone.Done()
		ctx, cancel := context.WithTimeout(context.Background(), p.grace)
		defer cancel()
		e.Stop(ctx)
		p.mu.Lock()
		delete(p.retiring, e)
		p.mu.Unlock()
	}()
}

// IDs returns the deployed chain ids, sorted.
func (p *Pool) IDs() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Sorted(maps.Keys(p.engines))
}

// Load implements types.RuleEnginePool: it deploys every *.json chain under
// folder, reporting the files that fail.
func (p *Pool) Load(folder string, opts ...types.RuleEngineOption) error {
	var errs []error
	err := filepath.WalkDir(folder, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		dsl, err := os.ReadFile(path)
		if err == nil {
			_, err = p.New("", dsl, opts...)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path, err))
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// New implements types.RuleEnginePool with RuleGo's semantics: an existing
// chain is returned unchanged. An empty id means the DSL's ruleChain.id.
//
// Concurrent calls for one chain build it once: the others wait for that
// build and get its engine. (Each used to build its own and publish it,
// retiring the engine the previous caller had just been given.) A version
// published meanwhile by Swap or Publish (a deploy) wins over the build,
// which is then stopped unused.
func (p *Pool) New(id string, dsl []byte, opts ...types.RuleEngineOption) (types.RuleEngine, error) {
	if id == "" {
		var err error
		if id, err = catalog.ChainID(dsl); err != nil {
			return nil, err
		}
	}
	p.mu.Lock()
	if e, ok := p.engines[id]; ok {
		p.mu.Unlock()
		return e, nil
	}
	if b, ok := p.building[id]; ok {
		p.mu.Unlock()
		<-b.done
		return b.e, b.err
	}
	b := &poolBuild{done: make(chan struct{})}
	p.building[id] = b
	p.mu.Unlock()
	defer close(b.done)

	e, err := p.Build(id, dsl, opts...)
	var unused types.RuleEngine
	p.mu.Lock()
	delete(p.building, id)
	if err == nil {
		if cur, ok := p.engines[id]; ok {
			unused, e = e, cur
		} else {
			p.engines[id] = e
		}
	}
	b.e, b.err = e, err
	p.mu.Unlock()
	if unused != nil {
		unused.Stop(context.Background())
	}
	return e, err
}

// Get implements types.RuleEnginePool.
func (p *Pool) Get(id string) (types.RuleEngine, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.engines[id]
	return e, ok
}

// Del implements types.RuleEnginePool.
func (p *Pool) Del(id string) { p.Remove(id) }

// Stop implements types.RuleEnginePool: every chain is stopped, its runs
// given RuleGo's default grace (10 s) before they are cancelled.
func (p *Pool) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.StopContext(ctx)
}

// StopContext stops every chain, retiring versions included, giving runs
// until ctx's deadline to end before they are cancelled.
func (p *Pool) StopContext(ctx context.Context) {
	p.mu.Lock()
	all := slices.Collect(maps.Values(p.engines))
	all = append(all, slices.Collect(maps.Keys(p.retiring))...)
	p.engines = map[string]types.RuleEngine{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Go(func() { e.Stop(ctx) })
	}
	wg.Wait()
	p.retireDone.Wait()
}

// OnMsg implements types.RuleEnginePool: every chain gets msg.
func (p *Pool) OnMsg(msg types.RuleMsg) {
	p.mu.RLock()
	all := slices.Collect(maps.Values(p.engines))
	p.mu.RUnlock()
	for _, e := range all {
		e.OnMsg(msg)
	}
}

// Reload implements types.RuleEnginePool.
func (p *Pool) Reload(opts ...types.RuleEngineOption) {
	p.mu.RLock()
	all := slices.Collect(maps.Values(p.engines))
	p.mu.RUnlock()
	for _, e := range all {
		_ = e.Reload(opts...)
	}
}

// Range implements types.RuleEnginePool.
func (p *Pool) Range(f func(key, value any) bool) {
	for _, id := range p.IDs() {
		if e, ok := p.Get(id); ok && !f(id, e) {
			return
		}
	}
}
