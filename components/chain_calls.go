package components

import "encoding/json"

// CalledChains lists the chains a chain definition calls by a fixed id:
// the targets of its agents' rulechain and agent tools and of its flow
// nodes, each once, in the order they appear. A target built from a
// placeholder (${...}) is not known before the chain runs and is left out.
func CalledChains(dsl []byte) []string {
	var def chainDef
	if json.Unmarshal(dsl, &def) != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range callsOf("", def.RuleChain.ID, &def) {
		if !seen[e.to] {
			seen[e.to] = true
			out = append(out, e.to)
		}
	}
	return out
}
