package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ruleagent/ruleagent/server/catalog"
)

// ChainInfo describes a deployed chain (see package catalog).
type ChainInfo = catalog.ChainInfo

// Describe reads a chain's catalog entry from its DSL.
func Describe(dsl []byte) (ChainInfo, error) { return catalog.Describe(dsl) }

// chainIDOfFile names a chain file that could not be read for its id.
func chainIDOfFile(path string) string {
	if dsl, err := os.ReadFile(path); err == nil {
		if id, err := ChainID(dsl); err == nil && id != "" {
			return id
		}
	}
	return strings.TrimSuffix(filepath.Base(path), ".json")
}

func quote(s string) string { return strconv.Quote(s) }

// List describes every deployed chain, sorted by id. A chain whose file
// was changed into something that does not load carries the error (it
// keeps running its last good version).
func (s *Store) List() []ChainInfo {
	var out []ChainInfo
	for _, id := range s.pool.IDs() {
		dsl, ok := s.DSL(id)
		if !ok {
			continue
		}
		info, err := Describe(dsl)
		if err != nil {
			continue
		}
		info.ID = id
		info.Endpoints = s.Endpoints(id)
		s.mu.Lock()
		info.File = s.files[id]
		if err := s.broken[info.File]; err != nil && info.File != "" {
			info.Error = err.Error()
		}
		s.mu.Unlock()
		info.Fleet = s.fleetState(id)
		out = append(out, info)
	}
	return out
}

// Broken lists the chain files that failed to load, by path, with why.
func (s *Store) Broken() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.broken))
	for p, err := range s.broken {
		out[p] = err.Error()
	}
	return out
}

// DSL returns a deployed chain's definition, exactly as it was deployed.
func (s *Store) DSL(id string) ([]byte, bool) {
	if _, ok := s.pool.Get(id); !ok {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dsl, ok := s.source[id]
	return dsl, ok
}

// File returns the file a chain was loaded from, if any.
func (s *Store) File(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	return f, ok
}

// Dir is the chains folder ("" for a store without one).
func (s *Store) Dir() string { return s.dir }
