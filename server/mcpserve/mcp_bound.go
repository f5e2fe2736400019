package mcpserve

import (
	"encoding/json"
	"slices"
)

// boundParams finds, for every deployed chain, the parameters that other
// chains bind when they call it as a rulechain or agent tool ("bind":
// {"userId": "metadata.userId"}). A bound parameter is an identity or a
// setting the model must not choose. No MCP call can fill a binding (the
// client, often a model, chooses every argument), so such a chain is not
// offered as an MCP tool: not over /mcp, not over stdio, not to an agent's
// "self" entry.
func boundParams(s Host) map[string][]string {
	bound := map[string][]string{}
	for _, info := range s.List() {
		dsl, ok := s.DSL(info.ID)
		if !ok {
			continue
		}
		for target, params := range bindingsIn(dsl) {
			for _, p := range params {
				if !slices.Contains(bound[target], p) {
					bound[target] = append(bound[target], p)
				}
			}
		}
	}
	for _, ps := range bound {
		slices.Sort(ps)
	}
	return bound
}

// bindingsIn lists the parameters a chain's tools bind, by target chain.
func bindingsIn(dsl []byte) map[string][]string {
	var doc struct {
		Metadata struct {
			Nodes []struct {
				Configuration struct {
					Tools json.RawMessage `json:"tools"`
				} `json:"configuration"`
			} `json:"nodes"`
		} `json:"metadata"`
	}
	if json.Unmarshal(dsl, &doc) != nil {
		return nil
	}
	out := map[string][]string{}
	for _, n := range doc.Metadata.Nodes {
		raw := n.Configuration.Tools
		// The editor may hand the tools array over as a JSON string.
		var text string
		if json.Unmarshal(raw, &text) == nil {
			raw = json.RawMessage(text)
		}
		var specs []struct {
			Type     string            `json:"type"`
			TargetID string            `json:"targetId"`
			Bind     map[string]string `json:"bind"`
		}
		if json.Unmarshal(raw, &specs) != nil {
			continue
		}
		for _, sp := range specs {
			if (sp.Type != "rulechain" && sp.Type != "agent") || sp.TargetID == "" {
				continue
			}
			for p := range sp.Bind {
				out[sp.TargetID] = append(out[sp.TargetID], p)
			}
		}
	}
	return out
}
