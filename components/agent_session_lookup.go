package components

import (
	"encoding/json"

	"github.com/ruleagent/ruleagent/sessions"
)

// SessionAgent is an agent node that keeps sessions, as its chain's DSL
// declares it.
type SessionAgent struct {
	ChainID string
	NodeID  string
	// Config is its session configuration, Agent filled in (the chain id
	// unless session.name says otherwise).
	Config sessions.Config
	// Models are the names of its allowedModels entries.
	Models []string
}

// SessionAgents lists the agent nodes of chain DSL whose session scope is
// not none. A node whose session configuration is invalid is left out: its
// chain does not load.
func SessionAgents(dsl []byte) []SessionAgent {
	var def chainDef
	if json.Unmarshal(dsl, &def) != nil {
		return nil
	}
	var out []SessionAgent
	for _, n := range def.Metadata.Nodes {
		if n.Type != AgentType {
			continue
		}
		raw, _ := n.Configuration["session"].(map[string]any)
		sp, err := parseSession(raw)
		if err != nil || sp == nil || sp.cfg.Scope == sessions.ScopeNone {
			continue
		}
		a := SessionAgent{ChainID: def.RuleChain.ID, NodeID: n.ID, Config: sp.cfg}
		if a.Config.Agent == "" {
			a.Config.Agent = def.RuleChain.ID
		}
		for _, m := range sp.models {
			a.Models = append(a.Models, m.Name)
		}
		out = append(out, a)
	}
	return out
}
