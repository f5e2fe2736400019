package components

import (
	"fmt"

	"github.com/rulego/rulego/api/types"
	"github.com/rulego/rulego/utils/str"
)

// placeholderEnv is what RuleGo fills a node's configuration from before
// Init: the globals, the chain's vars and its ruleChain settings.
func placeholderEnv(globals map[string]string, def *chainDef) map[string]any {
	g := map[string]string{}
	for k, v := range globals {
		g[k] = v
	}
	vars := map[string]string{}
	if vs, ok := def.RuleChain.Configuration[types.Vars].(map[string]any); ok {
		for k, v := range vs {
			vars[k] = fmt.Sprint(v)
		}
	}
	rc := def.RuleChain
	return map[string]any{types.Global: g, types.Vars: vars, types.RuleChainKey: &rc}
}

// fill replaces ${global.x}, ${vars.x} and ${ruleChain.x} in every string
// of a node's configuration, as RuleGo does before Init (engine/node.go,
// processVariables): a placeholder nothing fills stays as text.
func fill(v map[string]any, env map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = fillValue(x, env)
	}
	return out
}

func fillValue(v any, env map[string]any) any {
	switch x := v.(type) {
	case string:
		return str.ExecuteTemplate(x, env)
	case map[string]any:
		return fill(x, env)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fillValue(e, env)
		}
		return out
	}
	return v
}
