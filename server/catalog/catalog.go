// Package catalog says what a deployed chain is, as the chains API, the
// MCP server and the CLI describe it: its entry (ChainInfo), read from its
// DSL (Describe, ChainID), and what refuses a chain (InvalidChainError).
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/configerr"
	"github.com/rulego/rulego/api/types"
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

// EndpointInfo describes an endpoint a chain runs (in the chains API).
type EndpointInfo struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Address is what it listens on (server-side types), if anything.
	Address string `json:"address,omitempty"`
	// Routes are the routers' from paths (an HTTP path, a cron spec, ...).
	Routes []string `json:"routes,omitempty"`

	// Def is the definition it was started from (not in the API).
	Def *types.EndpointDsl `json:"-"`
}

// FleetChain is a chain's state against the fleet's chain store, in the
// chains API (ChainInfo.Fleet).
type FleetChain struct {
	// Version is the store's version of the chain; Applied the version
	// running here (0: none). They differ while a change is on its way,
	// and when this replica refused the store's version (Error says why).
	Version int64 `json:"version"`
	Applied int64 `json:"applied"`
	// Hash is the SHA-256 of the store's DSL: replicas that agree run the
	// same chain.
	Hash  string `json:"hash,omitempty"`
	Error string `json:"error,omitempty"`
}

// ErrInvalidChain is wrapped by every error that refuses chain DSL.
var ErrInvalidChain = errors.New("invalid chain")

// Problem is one thing wrong with chain DSL.
type Problem struct {
	// Path is the JSON path of the faulty value, such as "ruleChain.id", or
	// "" when the problem is the whole chain (the engine refused to build it).
	Path    string `json:"path"`
	Message string `json:"message"`
	// Warning marks what RuleGo accepts but may not work as meant (see
	// components.Problem); warnings never refuse a chain.
	Warning bool `json:"warning,omitempty"`
}

// InvalidChainError refuses chain DSL, listing every problem found. It
// wraps ErrInvalidChain.
type InvalidChainError struct {
	ID       string
	Problems []Problem
	// Warnings found beside the errors.
	Warnings []Problem
}

func (e *InvalidChainError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chain %q is invalid:", e.ID)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if p.Path != "" {
			b.WriteString(p.Path + ": ")
		}
		b.WriteString(p.Message)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrInvalidChain) hold.
func (e *InvalidChainError) Unwrap() error { return ErrInvalidChain }

// ChainID reads ruleChain.id from chain DSL.
func ChainID(dsl []byte) (string, error) {
	var head struct {
		RuleChain struct {
			ID string `json:"id"`
		} `json:"ruleChain"`
	}
	if err := json.Unmarshal(dsl, &head); err != nil {
		return "", configerr.FromJSON(err, dsl, &head)
	}
	return head.RuleChain.ID, nil
}
