package server

import (
	"encoding/json"
	"slices"

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
	// InputSchema is additionalInfo.inputSchema, when given.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

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

// List describes every deployed chain, sorted by id.
func (s *Store) List() []ChainInfo {
	var out []ChainInfo
	s.pool.Range(func(key, value any) bool {
		id, _ := key.(string)
		if e, ok := s.pool.Get(id); ok && e.Id() == id {
			if info, err := Describe(e.DSL()); err == nil {
				info.ID = id
				out = append(out, info)
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b ChainInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}

// DSL returns a deployed chain's definition.
func (s *Store) DSL(id string) ([]byte, bool) {
	e, ok := s.pool.Get(id)
	if !ok {
		return nil, false
	}
	return e.DSL(), true
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
