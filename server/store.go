// Package server serves agent chains over HTTP and MCP, and keeps the
// folder of chain files in step with the rule engine.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/ruleagent/ruleagent/components"
	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// Store keeps a folder of chain files deployed in a private engine pool.
type Store struct {
	dir  string
	pool *rulego.RuleGo
	cfg  types.Config

	mu       sync.Mutex
	files    map[string]string // chain id -> file
	watchers map[int]func(id string)
	watchSeq int

	// saveMu orders saves, so that the deployed chain and its file agree.
	saveMu sync.Mutex

	// mcp is the MCP server over this store (see NewMCPServer); mcpHTTP is
	// its streamable HTTP transport, made on first use.
	mcp       *mcpserver.MCPServer
	mcpHTTPMu sync.Mutex
	mcpHTTP   *mcpserver.StreamableHTTPServer
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

// OpenStore deploys every *.json chain under dir (recursively, in lexical
// order). Files that fail are reported and skipped; the others still run.
// dir may be empty for a store of explicitly loaded files only.
//
// Before any chain loads, it builds the store's MCP server (Store.MCP) and
// registers it in the chains' configuration under components.SelfMCPUDF, so that an
// mcp tool with server "self" finds it when its node initialises. cfg.Udf
// is copied first: the registration belongs to this store alone.
func OpenStore(dir string, cfg types.Config) (*Store, []error) {
	s := &Store{dir: dir, pool: rulego.NewRuleGo(), files: map[string]string{}, watchers: map[int]func(string){}}
	s.mcp = NewMCPServer(s, MCPOptions{})
	cfg.Udf = maps.Clone(cfg.Udf)
	if cfg.Udf == nil {
		cfg.Udf = map[string]any{}
	}
	components.RegisterSelfMCP(&cfg, s.mcp)
	s.cfg = cfg
	if dir == "" {
		return s, nil
	}
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return s, []error{fmt.Errorf("chains folder %s: %w", dir, err)}
	}
	slices.Sort(paths)
	var errs []error
	for _, p := range paths {
		if _, err := s.LoadFile(p); err != nil {
			errs = append(errs, err)
		}
	}
	return s, errs
}

// LoadFile deploys one chain file, replacing a chain with the same id.
func (s *Store) LoadFile(path string) (string, error) {
	dsl, err := os.ReadFile(path)
	if err != nil {
		return "", ChainFile{Path: path, Err: err}
	}
	id, err := s.Deploy(dsl, strings.TrimSuffix(filepath.Base(path), ".json"))
	if err != nil {
		return "", ChainFile{Path: path, Err: err}
	}
	s.mu.Lock()
	s.files[id] = path
	s.mu.Unlock()
	return id, nil
}

// Deploy deploys chain DSL. Its id is ruleChain.id, or fallbackID when that
// is empty. An existing chain with the id is reloaded in place; if the new
// DSL fails, the old chain keeps running.
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
	if e, ok := s.pool.Get(id); ok {
		if err := e.ReloadSelf(dsl, rulego.WithConfig(s.cfg)); err != nil {
			return id, err
		}
	} else if _, err := s.pool.New(id, dsl, rulego.WithConfig(s.cfg)); err != nil {
		return "", err
	}
	s.changed(id)
	return id, nil
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
func ChainID(dsl []byte) (string, error) {
	var head struct {
		RuleChain struct {
			ID string `json:"id"`
		} `json:"ruleChain"`
	}
	if err := json.Unmarshal(dsl, &head); err != nil {
		return "", fmt.Errorf("not a chain: %v", err)
	}
	return head.RuleChain.ID, nil
}

// Engine returns the deployed chain id.
func (s *Store) Engine(id string) (types.RuleEngine, bool) { return s.pool.Get(id) }

// Pool is the engine pool the chains run in.
func (s *Store) Pool() *rulego.RuleGo { return s.pool }

// Close ends the MCP sessions served over HTTP, then stops every chain,
// destroying their nodes (and closing what they opened: MCP clients,
// processes, workspaces).
func (s *Store) Close() {
	s.closeMCPHTTP()
	s.pool.Stop()
}

// quietLogger drops RuleGo's own log lines; ruleagent reports what matters.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
