package components

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/configerr"
)

// RuleGo replaces ${global.x} and ${vars.x} in a node's configuration
// before Init, and leaves a placeholder it cannot fill as text. In the
// LLM settings that is a state runs report (no LLM configured); in a path
// or a tool's settings it would be used literally: a folder named
// ${global.workspace}, a header "Bearer ${global.token}". So an unfilled
// placeholder there is a configuration error that names it.

// unresolved reports the first ${global.x} or ${vars.x} left in the
// workspace or the tools array.
func unresolved(c *Config) error {
	if v, ok := unfilled(c.Workspace); ok {
		return configerr.New("workspace", "%s", notSet(v))
	}
	for i, t := range c.Tools {
		if path, v, ok := unfilledIn(t); ok {
			return configerr.New(configerr.Join(fmt.Sprintf("tools[%d]", i), path), "%s", notSet(v))
		}
	}
	return nil
}

// unfilledIn finds an unfilled placeholder in a JSON value, with its path.
func unfilledIn(v any) (string, string, bool) {
	switch x := v.(type) {
	case string:
		p, ok := unfilled(x)
		return "", p, ok
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if path, p, ok := unfilledIn(x[k]); ok {
				return configerr.Join(k, path), p, true
			}
		}
	case []any:
		for i, e := range x {
			if path, p, ok := unfilledIn(e); ok {
				return configerr.Join(fmt.Sprintf("[%d]", i), path), p, true
			}
		}
	}
	return "", "", false
}

// unfilled finds a ${global.x} or ${vars.x} placeholder in s.
func unfilled(s string) (string, bool) {
	for _, prefix := range []string{"${global.", "${vars."} {
		if i := strings.Index(s, prefix); i >= 0 {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return s[i:], true
			}
			return s[i : i+end+1], true
		}
	}
	return "", false
}

// notSet explains an unfilled placeholder.
func notSet(v string) string {
	if name, ok := strings.CutPrefix(strings.TrimSuffix(v, "}"), "${global."); ok {
		return fmt.Sprintf("%s is not set: give it to the server (ruleagent serve or run --global %s=..., or RULEAGENT_GLOBAL_%s)", v, name, strings.ToUpper(name))
	}
	name := strings.TrimSuffix(strings.TrimPrefix(v, "${vars."), "}")
	return fmt.Sprintf("%s is not set: the chain's ruleChain.configuration.vars has no %q", v, name)
}
