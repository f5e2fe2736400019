// Package server serves agent chains over HTTP and MCP, and keeps the
// folder of chain files in step with the rule engine.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ruleagent/ruleagent/server/catalog"
	"github.com/ruleagent/ruleagent/server/chainpool"
	"github.com/ruleagent/ruleagent/server/mcpserve"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/ledger"
	"github.com/ruleagent/ruleagent/server/live"
	"github.com/ruleagent/ruleagent/server/runs"
	"github.com/ruleagent/ruleagent/state/chainsync"
	"github.com/ruleagent/ruleagent/state/checkpoint"
	"github.com/ruleagent/ruleagent/state/health"
	"github.com/ruleagent/ruleagent/state/tasks"
)

// Store keeps a folder of chain files deployed in a private engine pool,
// and the runs in progress on them.
type Store struct {
	// ledger is the usage ledger (nil: none).
	ledger *ledger.Ledger
	dir    string
	pool   *chainpool.Pool
	cfg    types.Config
	log    *slog.Logger

	// runs are the runs in progress; live fans their events and the node
	// trace out to WebSocket clients.
	runs *runs.Registry
	live *live.Hub
	// interrupts remembers the calls approved "always"; checkpoints keep
	// the paused runs, claimed by this replica to go on with them; expiry
	// goes on with those whose interrupts expire.
	interrupts  interruptIndex
	checkpoints checkpoint.Store
	replica     string
	expiry      *expiryTimers

	mu    sync.Mutex
	files map[string]string // chain id -> file
	// source is each deployed chain's DSL exactly as it was given (RuleGo's
	// engine re-encodes its definition, dropping what it does not know).
	source map[string][]byte
	// loading holds the folder's files while OpenStore deploys them, so
	// that a chain may call one that loads after it.
	loading []components.ChainFile
	// broken are the chain files that failed to load or reload, by path:
	// the running version (if any) stays, and the chains API reports it.
	broken   map[string]error
	watchers map[int]func(id string)
	watchSeq int
	watch    *folderWatch

	// saveMu orders deploys (API saves, watched files, deletes), so that
	// the deployed chain and its file agree.
	saveMu sync.Mutex

	// endpoints are the endpoints each chain declared and the store
	// started (see endpoints.go), under the endpoint policy.
	epMu      sync.Mutex
	endpoints map[string][]runningEndpoint
	epPolicy  EndpointPolicy
	readOnly  bool
	// draining refuses new runs (Drain).
	draining atomic.Bool
	// fleet is the fleet's chain store and its Syncer (nil on one
	// machine: the chains folder is the source).
	fleet *fleetChains

	// mcp is the MCP server over this store and its transports (package
	// mcpserve).
	mcp *mcpserve.Service

	// rl keeps the runs' events and reaches the fleet (run_log.go; nil:
	// runs keep no events).
	rl *runLogs
	// recording keeps each run's record and events (run_record.go);
	// recordWG waits for the records being written.
	recording Recording
	recordWG  sync.WaitGroup
	plays     playPools
	pending   pendingRecords

	// held are the paused runs whose checkpoints could not be released
	// yet (pause.go).
	held heldPauses
}

// NewConfig returns the RuleGo configuration ruleagent runs chains with:
// globals as ${global.x} properties, and RuleGo's own logging quiet.
func NewConfig(globals map[string]string) types.Config {
	cfg := rulego.NewConfig(types.WithLogger(quietLogger{}))
	for k, v := range globals {
		cfg.Properties.PutValue(k, v)
	}
	return cfg
}

// ChainFile is a chain file that failed to load.
type ChainFile struct {
	Path string
	Err  error
}

func (c ChainFile) Error() string { return c.Path + ": " + c.Err.Error() }

func (c ChainFile) Unwrap() error { return c.Err }

// StoreOptions configure a store beyond its RuleGo configuration.
type StoreOptions struct {
	// EndpointPolicy bounds the endpoints chains may declare and start.
	EndpointPolicy EndpointPolicy
	// Logger receives reloads, broken files and runs; slog's default when nil.
	Logger *slog.Logger
	// ReadOnly refuses changes to the chains through the store (the API's
	// PUT and DELETE, MCP's save_rule_chain, which is then not offered):
	// the chains folder, watched, is the only way to change them.
	ReadOnly bool
	// Ledger, when set, records every run's LLM and tool calls, prices
	// them and checks the daily budgets (see package ledger).
	Ledger *ledger.Ledger
	// Checkpoints keep the paused runs (see pause.go): bbolt under --data
	// on one machine, Redis for a fleet. Nil keeps them in the process's
	// memory: they do not outlive it.
	Checkpoints checkpoint.Store
	// Chains, when set, is the fleet's chain store (chainsync.Redis): the
	// chains live there, not in the folder given to OpenStoreWith (which
	// is then not loaded: a fleet's folder seeds the store, see
	// chainsync.Seed). Saves and deletes write to it, and SyncChains
	// deploys what it holds on this replica (fleet_chains.go).
	Chains chainsync.Store
	// Replica names this process among those sharing Checkpoints and
	// Chains (a fresh id when empty).
	Replica string
	// MCPTasks keeps the state of the MCP server's tasks (see
	// MCPOptions.Tasks); memory when nil.
	MCPTasks tasks.Store
	// MCPInputTimeout is how long an MCP run waits for its client's
	// answers (MCPOptions.InputTimeout; 10 minutes when zero).
	MCPInputTimeout time.Duration
	// RunLog keeps the runs' events, for clients to rejoin them from any
	// replica, and reaches the other replicas of a fleet (see RunLog).
	RunLog RunLog
	// Recording keeps each run's record and events, for the editor, for
	// replays and forks (see Recording).
	Recording Recording
}

// OpenStore is OpenStoreWith with default options.
func OpenStore(dir string, cfg types.Config) (*Store, []error) {
	return OpenStoreWith(dir, cfg, StoreOptions{})
}

// OpenStoreWith deploys every *.json chain under dir (recursively, in
// lexical order). Files that fail are reported and skipped; the others
// still run. dir may be empty for a store of explicitly loaded files only.
// The folder is not watched until Watch is called.
//
// Before any chain loads, it builds the store's MCP server (Store.MCP) and
// registers it in the chains' configuration under components.SelfMCPUDF, so that an
// mcp tool with server "self" finds it when its node initialises. cfg.Udf
// is copied first: the registration belongs to this store alone.
func OpenStoreWith(dir string, cfg types.Config, o StoreOptions) (*Store, []error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Store{dir: dir, pool: chainpool.New(), files: map[string]string{}, source: map[string][]byte{}, broken: map[string]error{},
		watchers: map[int]func(string){}, runs: runs.NewRegistry(), live: live.NewHub(), log: o.Logger,
		endpoints: map[string][]runningEndpoint{}, epPolicy: o.EndpointPolicy, readOnly: o.ReadOnly, ledger: o.Ledger,
		recording: o.Recording}
	s.watch = newFolderWatch(s)
	s.checkpoints, s.replica = o.Checkpoints, o.Replica
	if s.checkpoints == nil {
		s.checkpoints = checkpoint.NewMemory(nil)
	}
	if s.replica == "" {
		s.replica = health.NewReplicaID()
	}
	s.expiry = &expiryTimers{fire: s.expire}
	s.held.timers.fire = s.retryRelease
	if o.Chains != nil {
		s.fleet = newFleetChains(s, o.Chains, s.replica)
		s.dir, dir = "", ""
	}
	// The run logs and the checkpoints name this process alike.
	rl := o.RunLog
	if rl.Replica == "" {
		rl.Replica = s.replica
	}
	s.rl = newRunLogs(s, rl)
	s.mcp = mcpserve.New(mcpHost{s}, MCPOptions{Logger: o.Logger, Tasks: o.MCPTasks, InputTimeout: o.MCPInputTimeout})
	cfg.Udf = maps.Clone(cfg.Udf)
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	components.RegisterSelfMCP(&cfg, s.mcp.Server())
	cfg.OnDebug = s.traceNode
	// The store starts the endpoints chains declare itself (endpoints.go).
	cfg.EndpointEnabled = false
	s.cfg = cfg
	if err := s.watchExpiries(context.Background()); err != nil {
		s.log.Warn("the paused runs' store cannot be listed: runs paused before will not expire", "err", err)
	}
	if dir == "" {
		return s, nil
	}
	paths, err := chainFiles(dir)
	if err != nil {
		return s, []error{fmt.Errorf("chains folder %s: %w", dir, err)}
	}
	for _, p := range paths {
		if dsl, err := os.ReadFile(p); err == nil {
			s.loading = append(s.loading, components.ChainFile{Path: p, DSL: dsl})
		}
	}
	var errs []error
	for _, p := range paths {
		if _, err := s.LoadFile(p); err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.Lock()
	s.loading = nil
	s.mu.Unlock()
	return s, errs
}

// Deploy deploys chain DSL. Its id is ruleChain.id, or fallbackID when that
// is empty. An existing chain with the id is replaced; if the new DSL
// fails, the old chain keeps running. It does not validate beyond what the
// engine checks, nor write a file: see Save.
func (s *Store) Deploy(dsl []byte, fallbackID string) (string, error) {
	id, err := ChainID(dsl)
	if err != nil {
		return "", err
	}
	if id == "" {
		id = fallbackID
	}
	if id == "" {
		return "", errors.New("the chain has no ruleChain.id")
	}
	return id, s.deploy(id, dsl)
}

// deploy builds chain id, moves its endpoints to the new version's (all
// or nothing), then publishes it: runs in flight finish on the version
// they started with, new runs get the new one.
func (s *Store) deploy(id string, dsl []byte) error {
	eps, rc, err := s.endpointDefs(id, dsl)
	if err != nil {
		return err
	}
	if p := s.epPolicy.check(eps); len(p) > 0 {
		return &InvalidChainError{ID: id, Problems: p}
	}
	cfg, initErrs := components.WithInitErrors(s.cfg)
	e, err := s.pool.Build(id, dsl, rulego.WithConfig(cfg))
	if err != nil {
		return &InvalidChainError{ID: id, Problems: buildProblems(dsl, initErrs, err)}
	}
	if err := s.switchEndpoints(id, eps, rc); err != nil {
		//lint:ignore SA1012 RuleGo's Stop takes nil to mean "at once": this version never ran a message
		e.Stop(nil)
		return err
	}
	s.pool.Publish(id, e)
	s.mu.Lock()
	s.source[id] = slices.Clone(dsl)
	s.mu.Unlock()
	s.changed(id)
	s.live.Chain(id, "deployed")
	return nil
}

// Delete undeploys chain id and removes its file. Runs in flight go on on
// the deleted version until they end (cancelled after retireGrace); new
// runs of the id fail with ErrNoChain.
func (s *Store) Delete(id string) error {
	if s.readOnly {
		return fmt.Errorf("%w: chain %q stays; remove its file from the chains folder instead", ErrReadOnly, id)
	}
	if s.fleet != nil {
		return s.deleteFromFleet(context.Background(), id)
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if _, ok := s.pool.Get(id); !ok {
		return fmt.Errorf("%w: %q", ErrNoChain, id)
	}
	s.mu.Lock()
	path, hasFile := s.files[id]
	s.mu.Unlock()
	if hasFile {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", path, err)
		}
		s.watch.forget(path)
	}
	s.undeploy(id)
	return nil
}

// undeploy removes chain id from the pool and forgets its file.
func (s *Store) undeploy(id string) {
	s.mu.Lock()
	delete(s.files, id)
	delete(s.source, id)
	s.mu.Unlock()
	s.stopEndpoints(id)
	if s.pool.Remove(id) {
		s.changed(id)
		s.live.Chain(id, "deleted")
	}
}

// hasEndpoints reports whether chain DSL declares endpoints.
func hasEndpoints(dsl []byte) bool {
	var d struct {
		Metadata struct {
			Endpoints []json.RawMessage `json:"endpoints"`
		} `json:"metadata"`
	}
	return json.Unmarshal(dsl, &d) == nil && len(d.Metadata.Endpoints) > 0
}

// OnChange calls fn with a chain's id after that chain is deployed,
// reloaded or removed, on the goroutine that made the change. It returns a
// function that stops the calls.
func (s *Store) OnChange(fn func(id string)) (stop func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watchSeq++
	key := s.watchSeq
	s.watchers[key] = fn
	return func() {
		s.mu.Lock()
		delete(s.watchers, key)
		s.mu.Unlock()
	}
}

// changed tells the OnChange watchers that chain id changed. Anything that
// deploys, reloads or removes a chain calls it once the change is done.
func (s *Store) changed(id string) {
	s.mu.Lock()
	keys := slices.Sorted(maps.Keys(s.watchers))
	fns := make([]func(string), len(keys))
	for i, k := range keys {
		fns[i] = s.watchers[k]
	}
	s.mu.Unlock()
	for _, fn := range fns {
		fn(id)
	}
}

// ChainID reads ruleChain.id from chain DSL.
func ChainID(dsl []byte) (string, error) { return catalog.ChainID(dsl) }

// WithoutLLM lists the deployed chains with an ai/agent or ai/intent node
// whose url or model neither a global nor the node's own setting fills:
// their runs fail, saying what to set, until one is set.
func (s *Store) WithoutLLM() []string {
	var out []string
	globals := s.cfg.Properties.Values()
	for _, info := range s.List() {
		if dsl, ok := s.DSL(info.ID); ok && len(components.WithoutLLM(dsl, globals)) > 0 {
			out = append(out, info.ID)
		}
	}
	return out
}

// Engine returns the deployed chain id.
func (s *Store) Engine(id string) (types.RuleEngine, bool) { return s.pool.Get(id) }

// Pool is the engine pool the chains run in.
func (s *Store) Pool() types.RuleEnginePool { return s.pool }

// Runs is the registry of the runs in progress.
func (s *Store) Runs() *runs.Registry { return s.runs }

// Live is the hub of the WebSocket trace.
func (s *Store) Live() *live.Hub { return s.live }

// SetLogger sets where the store logs (reloads, broken files); slog's
// default logger until then.
func (s *Store) SetLogger(l *slog.Logger) {
	if l != nil {
		s.log = l
	}
}

// Close stops watching the folder, ends the MCP sessions served over HTTP,
// disconnects WebSocket clients, then stops every chain, destroying their
// nodes (and closing what they opened: MCP clients, processes, workspaces).
func (s *Store) Close() {
	// Paused runs stay in the checkpoint store, for the next process.
	s.expiry.close()
	s.held.timers.close()
	s.watch.close()
	s.mcp.Close()
	s.live.Close()
	for _, id := range s.pool.IDs() {
		s.stopEndpoints(id)
	}
	s.pool.Stop()
	s.plays.stop()
	s.recordWG.Wait()
	s.rl.close()
}

// quietLogger drops RuleGo's own log lines; ruleagent reports what matters.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
