package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ruleagent/ruleagent/components"
)

// ChainInfo describes a deployed chain.
type ChainInfo struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Root        bool   `json:"root"`
	Disabled    bool   `json:"disabled"`
	// IsAgent is true when the chain contains an ai/agent node.
	IsAgent bool `json:"isAgent"`
	// MCP is true when additionalInfo.mcp marks the chain as a tool.
	MCP bool `json:"mcp,omitempty"`
	// MCPTask is additionalInfo.mcpTask, how the chain's MCP tool runs as a
	// task (the tasks extension): "optional" (the default: a task for
	// clients that declare the extension), "required" or "forbidden".
	MCPTask string `json:"mcpTask,omitempty"`
	// MCPTaskAfterInput is additionalInfo.mcpTaskAfterInput: the chain
	// asks for its input first, as a plain call (input_required), and the
	// call that answers becomes the task.
	MCPTaskAfterInput bool `json:"mcpTaskAfterInput,omitempty"`
	// InputSchema is additionalInfo.inputSchema, when given.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// File is the chain's file in the chains folder, if it has one.
	File string `json:"file,omitempty"`
	// Error says why the chain's file failed to (re)load; a deployed chain
	// keeps running the version it had.
	Error string `json:"error,omitempty"`
	// Deployed is false for a chain file that failed to load and has no
	// running version (in the chains API list only).
	Deployed bool `json:"deployed"`
	// Endpoints are the endpoints the chain declares and runs.
	Endpoints []EndpointInfo `json:"endpoints,omitempty"`
	// Warnings are what validation found that does not refuse the chain
	// (answers of PUT only).
	Warnings []Problem `json:"warnings,omitempty"`
	// Fleet is the chain's state against the fleet's chain store (a
	// server of a fleet only).
	Fleet *FleetChain `json:"fleet,omitempty"`
}

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

// chainDoc is the part of a chain's DSL the catalog reads.
type chainDoc struct {
	RuleChain struct {
		ID             string         `json:"id"`
		Name           string         `json:"name"`
		Root           bool           `json:"root"`
		Disabled       bool           `json:"disabled"`
		AdditionalInfo map[string]any `json:"additionalInfo"`
	} `json:"ruleChain"`
	Metadata struct {
		Nodes []struct {
			Type string `json:"type"`
		} `json:"nodes"`
	} `json:"metadata"`
}

// Describe reads a chain's catalog entry from its DSL.
func Describe(dsl []byte) (ChainInfo, error) {
	var d chainDoc
	if err := json.Unmarshal(dsl, &d); err != nil {
		return ChainInfo{}, err
	}
	rc := d.RuleChain
	info := ChainInfo{ID: rc.ID, Name: rc.Name, Root: rc.Root, Disabled: rc.Disabled}
	if s, ok := rc.AdditionalInfo["description"].(string); ok {
		info.Description = s
	}
	if b, ok := rc.AdditionalInfo["mcp"].(bool); ok {
		info.MCP = b
	}
	if v, ok := rc.AdditionalInfo["mcpTask"].(string); ok {
		info.MCPTask = v
	}
	if b, ok := rc.AdditionalInfo["mcpTaskAfterInput"].(bool); ok {
		info.MCPTaskAfterInput = b
	}
	switch v := rc.AdditionalInfo["inputSchema"].(type) {
	case string:
		if json.Valid([]byte(v)) {
			info.InputSchema = json.RawMessage(v)
		}
	case map[string]any:
		info.InputSchema, _ = json.Marshal(v)
	}
	for _, n := range d.Metadata.Nodes {
		if n.Type == components.AgentType {
			info.IsAgent = true
		}
	}
	return info, nil
}

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
