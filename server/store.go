// Package server serves agent chains over HTTP and MCP, and keeps the
// folder of chain files in step with the rule engine.
package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rulego/rulego"
	"github.com/rulego/rulego/api/types"
)

// Store keeps a folder of chain files deployed in a private engine pool.
type Store struct {
	dir  string
	pool *rulego.RuleGo
	cfg  types.Config

	mu    sync.Mutex
	files map[string]string // chain id -> file
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
func OpenStore(dir string, cfg types.Config) (*Store, []error) {
	s := &Store{dir: dir, pool: rulego.NewRuleGo(), cfg: cfg, files: map[string]string{}}
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
		return id, e.ReloadSelf(dsl, rulego.WithConfig(s.cfg))
	}
	if _, err := s.pool.New(id, dsl, rulego.WithConfig(s.cfg)); err != nil {
		return "", err
	}
	return id, nil
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

// Close stops every chain, destroying their nodes (and closing what they
// opened: MCP clients, processes, workspaces).
func (s *Store) Close() { s.pool.Stop() }

// quietLogger drops RuleGo's own log lines; ruleagent reports what matters.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Warnf(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
