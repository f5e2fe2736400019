package server

import (
	"encoding/json"
	"strings"

	"github.com/rulego/rulego/utils/str"

	"github.com/ruleagent/ruleagent/components"
	"github.com/ruleagent/ruleagent/demo"
)

// ownedByDemo is the owned_by of a model (a chain) whose agents answer from
// the built-in demo model, in GET /v1/models.
const ownedByDemo = "ruleagent-demo"

// OnDemoModel lists the deployed chains that have an agent (or intent)
// node answering from the built-in demo model.
func (s *Store) OnDemoModel() []string {
	var out []string
	for _, id := range s.pool.IDs() {
		if s.onDemoModel(id) {
			out = append(out, id)
		}
	}
	return out
}

// onDemoModel reports whether a deployed chain has an agent (or intent)
// node that answers from the built-in demo model: its url (by default
// ${global.llm_url}), with the globals filled, is the demo model's.
func (s *Store) onDemoModel(id string) bool {
	dsl, ok := s.DSL(id)
	if !ok {
		return false
	}
	var d struct {
		Metadata struct {
			Nodes []struct {
				Type          string `json:"type"`
				Configuration struct {
					URL *string `json:"url"`
				} `json:"configuration"`
			} `json:"nodes"`
		} `json:"metadata"`
	}
	if json.Unmarshal(dsl, &d) != nil {
		return false
	}
	var env map[string]any
	for _, n := range d.Metadata.Nodes {
		if n.Type != components.AgentType && n.Type != components.IntentType {
			continue
		}
		url := "${global.llm_url}"
		if n.Configuration.URL != nil {
			url = *n.Configuration.URL
		}
		if strings.Contains(url, "${") {
			if env == nil {
				env = map[string]any{"global": s.cfg.Properties.Values()}
			}
			url = str.ExecuteTemplate(url, env)
		}
		if demo.IsURL(url) {
			return true
		}
	}
	return false
}
