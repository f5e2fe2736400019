package components

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

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

// ErrNoSessionAgent reports a session whose agent no chain declares.
var ErrNoSessionAgent = errors.New("no agent keeps these sessions")

// ResolveSessionModel checks that name may be set as the model of the
// session key among the chains dsls: an agent named key.Agent keeps
// sessions of key's scope and lists name in its allowedModels. It returns
// the agent and the name to store ("" for DefaultModelName).
func ResolveSessionModel(dsls [][]byte, key sessions.Key, name string) (SessionAgent, string, error) {
	name = strings.TrimSpace(name)
	if name == DefaultModelName {
		name = ""
	}
	for _, dsl := range dsls {
		for _, a := range SessionAgents(dsl) {
			if a.Config.Agent != key.Agent {
				continue
			}
			if a.Config.Scope != key.Scope {
				return a, "", fmt.Errorf("agent %q keeps %s sessions, not %s", key.Agent, a.Config.Scope, key.Scope)
			}
			if name != "" && !slices.Contains(a.Models, name) {
				return a, "", fmt.Errorf("model %q is not in agent %q's session.allowedModels (%s)", name, key.Agent, strings.Join(a.Models, ", "))
			}
			return a, name, nil
		}
	}
	return SessionAgent{}, "", fmt.Errorf("%w: no deployed agent keeps sessions named %q", ErrNoSessionAgent, key.Agent)
}
