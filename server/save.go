package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ruleagent/ruleagent/server/catalog"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/policy"
	"github.com/tidwall/sjson"
)

// ErrInvalidChain is wrapped by every error that refuses chain DSL.
var ErrInvalidChain = catalog.ErrInvalidChain

// Problem is one thing wrong with chain DSL (see package catalog).
type Problem = catalog.Problem

// InvalidChainError refuses chain DSL, listing every problem found (see
// package catalog).
type InvalidChainError = catalog.InvalidChainError

// Save validates chain DSL and deploys it as chain id (id may be empty when
// the DSL names itself). A chain that fails validation or fails to build is
// refused with an *InvalidChainError, and the chain already deployed under
// that id keeps running. Only once the new chain runs is it written to the
// chains folder, atomically: to the file it was loaded from, else to
// <id>.json. A store without a folder only deploys.
func (s *Store) Save(id string, dsl []byte) (ChainInfo, error) {
	return s.SaveFrom(context.Background(), id, dsl)
}

// SaveFrom is Save for a chain saved during ctx. When ctx is within agent
// runs (an agent calling save_rule_chain through the self MCP server), the
// chain may hold no more power than each of those agents: no tool they
// lack or a wider one, no other LLM endpoint, no chain they cannot call,
// no server setting, no component that reaches outside the process
// (components.SavedBy); otherwise it is refused like an invalid chain.
func (s *Store) SaveFrom(ctx context.Context, id string, dsl []byte) (ChainInfo, error) {
	if s.readOnly {
		return ChainInfo{}, fmt.Errorf("%w: chain %q is not deployed; change the chains folder instead", ErrReadOnly, id)
	}
	if s.fleet != nil {
		return s.saveToFleet(ctx, id, dsl)
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	path := ""
	if s.dir != "" && id != "" {
		path = s.fileFor(id)
	}
	id, dsl, problems, warnings := s.validate(id, dsl, path, false)
	if len(problems) == 0 {
		problems = s.savedBy(ctx, dsl)
	}
	if len(problems) > 0 {
		return ChainInfo{}, &InvalidChainError{ID: id, Problems: problems, Warnings: warnings}
	}
	if err := s.deploy(id, dsl); err != nil {
		return ChainInfo{}, refusal(id, err, warnings)
	}
	info, err := Describe(dsl)
	if err != nil {
		return ChainInfo{}, err
	}
	info.ID, info.Warnings = id, warnings
	if s.dir == "" {
		return info, nil
	}
	path = s.fileFor(id)
	s.watch.expect(path, dsl)
	if err := writeFileAtomic(path, dsl); err != nil {
		return info, fmt.Errorf("chain %q runs, but saving it failed: %w", id, ChainFile{Path: path, Err: err})
	}
	s.mu.Lock()
	s.files[id] = path
	delete(s.broken, path)
	s.mu.Unlock()
	info.File = path
	return info, nil
}

// validate is the one place chain DSL is checked before it is deployed,
// whether it comes from the API (Save), the MCP server or a file in the
// folder (loading and watching). It returns the chain's id and its DSL,
// with ruleChain.id filled in when the DSL had none, and every problem
// found, errors apart from warnings. path is the file the chain is saved
// to (API) or read from (fromFile); it may be empty.
func (s *Store) validate(id string, dsl []byte, path string, fromFile bool) (string, []byte, []Problem, []Problem) {
	var doc struct {
		RuleChain *struct {
			ID *string `json:"id"`
		} `json:"ruleChain"`
	}
	if err := json.Unmarshal(dsl, &doc); err != nil {
		return id, dsl, problemsOf("", configerr.FromJSON(err, dsl, &doc)), nil
	}
	if doc.RuleChain == nil {
		return id, dsl, []Problem{{Path: "ruleChain", Message: "missing"}}, nil
	}
	var problems []Problem
	own := ""
	if doc.RuleChain.ID != nil {
		own = *doc.RuleChain.ID
	}
	switch {
	case own != "" && id != "" && own != id:
		problems = append(problems, Problem{Path: "ruleChain.id", Message: fmt.Sprintf("is %q, but the chain is saved as %q", own, id)})
	case own == "" && id == "":
		problems = append(problems, Problem{Path: "ruleChain.id", Message: "missing: the chain needs an id"})
	case own == "":
		var err error
		if dsl, err = sjson.SetBytes(dsl, "ruleChain.id", id); err != nil {
			problems = append(problems, Problem{Path: "ruleChain.id", Message: err.Error()})
		}
	default:
		id = own
	}
	// An id the API saves names its file; a file in the folder already has
	// its name, so its id may be anything RuleGo accepts.
	if id != "" && !fromFile && !fileSafeID(id) {
		problems = append(problems, Problem{Path: "ruleChain.id", Message: fmt.Sprintf("%q cannot name a chain file: use letters, digits, '-', '_' and '.', with no leading dot", id)})
	}
	var warnings []Problem
	if len(problems) == 0 {
		problems, warnings = s.staticProblems(id, dsl)
		eps, _, err := s.endpointDefs(id, dsl)
		if err != nil {
			problems = append(problems, Problem{Path: "metadata.endpoints", Message: err.Error()})
		}
		problems = append(problems, s.epPolicy.check(eps)...)
	}
	if id != "" && path != "" {
		s.mu.Lock()
		for other, f := range s.files {
			switch {
			case fromFile && other == id && f != path:
				problems = append(problems, Problem{Path: "ruleChain.id", Message: fmt.Sprintf("chain %q is already deployed from %s", id, f)})
			case !fromFile && f == path && other != id:
				problems = append(problems, Problem{Path: "ruleChain.id", Message: fmt.Sprintf("%s already holds chain %q", path, other)})
			}
		}
		s.mu.Unlock()
	}
	return id, dsl, problems, warnings
}

// staticProblems runs the checks of "ruleagent validate" on chain id's DSL,
// with the other deployed chains (and, while the folder loads, its files)
// as context: what it calls should exist, and no call cycle may appear.
func (s *Store) staticProblems(id string, dsl []byte) (errs, warnings []Problem) {
	var others []components.ChainFile
	for _, info := range s.List() {
		if info.ID == id {
			continue
		}
		if other, ok := s.DSL(info.ID); ok {
			others = append(others, components.ChainFile{Path: info.ID + ".json", DSL: other})
		}
	}
	s.mu.Lock()
	others = append(others, s.loading...)
	s.mu.Unlock()
	deployed := func(target string) bool {
		_, ok := s.pool.Get(target)
		return ok
	}
	opts := components.Options{Known: deployed, Globals: s.cfg.Properties.Values(), Sandbox: components.GovernanceOf(s.cfg).Sandbox}
	for _, p := range components.Validate([]components.ChainFile{{Path: id + ".json", DSL: dsl}}, others, opts) {
		sp := Problem{Path: p.Path, Message: p.Msg, Warning: p.Warning}
		if p.Warning {
			warnings = append(warnings, sp)
		} else {
			errs = append(errs, sp)
		}
	}
	return errs, warnings
}

// savedBy checks a chain saved during ctx against the agents ctx is
// within (see SaveFrom): each saving agent's node as deployed now.
func (s *Store) savedBy(ctx context.Context, dsl []byte) []Problem {
	refs := tools.AgentsFrom(ctx)
	if len(refs) == 0 {
		return nil
	}
	check := components.SaveCheck{Restrictions: policy.FromContext(ctx), Exposed: s.mcp.Offers}
	for _, ref := range refs {
		cfg, ok := s.nodeConfig(ref.ChainID, ref.NodeID)
		if !ok {
			return []Problem{{Message: fmt.Sprintf("the saving agent %s/%s is no longer deployed", ref.ChainID, ref.NodeID)}}
		}
		check.Savers = append(check.Savers, components.Saver{ChainID: ref.ChainID, NodeID: ref.NodeID, Config: cfg})
	}
	var out []Problem
	for _, p := range components.SavedBy(dsl, check) {
		out = append(out, Problem{Path: p.Path, Message: p.Msg})
	}
	return out
}

// nodeConfig is the configuration of node nodeID of deployed chain
// chainID, as its DSL gives it.
func (s *Store) nodeConfig(chainID, nodeID string) (map[string]any, bool) {
	dsl, ok := s.DSL(chainID)
	if !ok {
		return nil, false
	}
	var def struct {
		Metadata struct {
			Nodes []struct {
				ID            string         `json:"id"`
				Configuration map[string]any `json:"configuration"`
			} `json:"nodes"`
		} `json:"metadata"`
	}
	if json.Unmarshal(dsl, &def) != nil {
		return nil, false
	}
	for _, n := range def.Metadata.Nodes {
		if n.ID == nodeID {
			return n.Configuration, true
		}
	}
	return nil, false
}

// refusal is the error of a chain that did not deploy: the problems of
// an *InvalidChainError (its configuration errors, each at its path), else
// err as a problem of the whole chain; with the warnings found before.
func refusal(id string, err error, warnings []Problem) error {
	var inv *InvalidChainError
	if errors.As(err, &inv) {
		inv.Warnings = append(warnings, inv.Warnings...)
		return inv
	}
	return &InvalidChainError{ID: id, Problems: []Problem{{Message: err.Error()}}, Warnings: warnings}
}

// buildProblems explains why the engine refused to build a chain: the
// typed errors the chain's nodes returned from Init, each at its JSON path
// (RuleGo passes them on as text only), else the engine's error.
func buildProblems(dsl []byte, initErrs *components.InitErrors, err error) []Problem {
	var def struct {
		Metadata struct {
			Nodes []struct {
				ID string `json:"id"`
			} `json:"nodes"`
		} `json:"metadata"`
	}
	var out []Problem
	if json.Unmarshal(dsl, &def) == nil {
		for i, n := range def.Metadata.Nodes {
			id := n.ID
			if id == "" {
				id = fmt.Sprintf("node%d", i)
			}
			if nerr := initErrs.Node(id); nerr != nil {
				out = append(out, problemsOf(fmt.Sprintf("metadata.nodes[%d].configuration", i), nerr)...)
			}
		}
	}
	if len(out) == 0 {
		return []Problem{{Message: err.Error()}}
	}
	return out
}

// problemsOf lists the configuration errors err holds, each at its path
// under prefix; an error that is not one is a problem at prefix.
func problemsOf(prefix string, err error) []Problem {
	all := configerr.All(err)
	if len(all) == 0 {
		return []Problem{{Path: prefix, Message: err.Error()}}
	}
	out := make([]Problem, len(all))
	for i, e := range all {
		out[i] = Problem{Path: configerr.Join(prefix, e.Path), Message: e.Msg}
	}
	return out
}

// fileSafeID reports whether id can be a chain id and a file name in the
// chains folder: letters, digits, '-', '_' and '.', not starting with a dot,
// at most 128 characters. Path separators, "..", spaces, control and
// shell characters are refused, so an id can never reach outside the
// folder or name a hidden file.
func fileSafeID(id string) bool {
	if id == "" || len(id) > 128 || strings.HasPrefix(id, ".") {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
		default:
			return false
		}
	}
	return true
}

// fileFor is the file chain id is saved to.
func (s *Store) fileFor(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.files[id]; ok {
		return f
	}
	return filepath.Join(s.dir, id+".json")
}

// writeFileAtomic replaces path with data, so that a reader (or a crash)
// sees the old file or the new one, never half of one.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return err
}
