package mcpserve

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/ruleagent/ruleagent/tools/scrub"
)

// secrets returns the scrubber for the error texts of chain id's tool: a
// failed run's message may quote an LLM key (a provider's 401 answer) or a
// URL with a password, and MCP clients are outside the run. It redacts
// what the run's own event stream redacts: the static token and URL
// patterns, the store's globals whose names say they are secret, and the
// secret fields of the chain's node configurations (the agent's "key",
// tokens, passwords, headers such as Authorization, env values), with
// ${global.x} resolved.
func (c *chainTools) secrets(id string) *scrub.Scrubber {
	s := scrub.New()
	props := c.store.Globals()
	for k, v := range props {
		if scrub.IsSecretName(k) {
			s.AddSecrets(v)
		}
	}
	if dsl, ok := c.store.DSL(id); ok {
		var doc struct {
			Metadata struct {
				Nodes []struct {
					Configuration any `json:"configuration"`
				} `json:"nodes"`
			} `json:"metadata"`
		}
		if json.Unmarshal(dsl, &doc) == nil {
			for _, n := range doc.Metadata.Nodes {
				collectSecrets(n.Configuration, false, func(v string) { s.AddSecrets(resolveGlobals(v, props)) })
			}
		}
	}
	return s
}

// collectSecrets calls add with every string held under a secret-sounding
// key of v, at any depth. Under such a key (secret), every string counts:
// {"headers": {"Authorization": "..."}} and {"env": {"TOKEN": "..."}} are
// found by their inner key, {"key": "sk-..."} by its own.
func collectSecrets(v any, secret bool, add func(string)) {
	switch x := v.(type) {
	case string:
		if secret {
			add(x)
		}
	case []any:
		for _, e := range x {
			collectSecrets(e, secret, add)
		}
	case map[string]any:
		for k, e := range x {
			collectSecrets(e, secret || secretField(k), add)
		}
	}
}

// secretField reports a configuration key that holds a secret. "key" is the
// agent node's LLM key, a name too short for scrub to judge on its own.
func secretField(k string) bool {
	return k == "key" || scrub.IsSecretName(k)
}

var globalRef = regexp.MustCompile(`\$\{global\.([^}]+)\}`)

// resolveGlobals replaces ${global.x} with its value.
func resolveGlobals(v string, props map[string]string) string {
	if !strings.Contains(v, "${") {
		return v
	}
	return globalRef.ReplaceAllStringFunc(v, func(m string) string {
		if val, ok := props[globalRef.FindStringSubmatch(m)[1]]; ok {
			return val
		}
		return m
	})
}
