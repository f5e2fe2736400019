package components

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// callsOf lists the chains a chain calls: the targets of its agents'
// rulechain and agent tools, and of its flow nodes.
func callsOf(file, id string, def *chainDef) []edge {
	var out []edge
	for i, n := range def.Metadata.Nodes {
		p := fmt.Sprintf("metadata.nodes[%d]", i)
		switch n.Type {
		case "flow":
			// RuleGo reads the key regardless of case (targetID too).
			if t, ok := member(n.Configuration, "targetId").(string); ok && t != "" && !strings.Contains(t, "${") {
				out = append(out, edge{from: id, to: t, file: file, path: p + ".configuration.targetId"})
			}
		case AgentType:
			raw, _ := json.Marshal(n.Configuration["tools"])
			specs, err := tools.ParseSpecs(raw)
			if err != nil {
				continue // reported by checkAgentConfig
			}
			for j, s := range specs {
				if (s.Type == tools.TypeRuleChain || s.Type == tools.TypeAgent) && !strings.Contains(s.TargetID, "${") {
					out = append(out, edge{from: id, to: s.TargetID, file: file, path: fmt.Sprintf("%s.configuration.tools[%d].targetId", p, j)})
				}
			}
		}
	}
	return out
}

// cycles reports each cycle of chain calls once, at the call that closes
// it, when that call is in a reported file.
func cycles(edges []edge, reported map[string]bool) []Problem {
	out := map[string][]edge{}
	for _, e := range edges {
		out[e.from] = append(out[e.from], e)
	}
	var problems []Problem
	seenCycle := map[string]bool{}
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack []edge
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		for _, e := range out[id] {
			switch color[e.to] {
			case white:
				stack = append(stack, e)
				visit(e.to)
				stack = stack[:len(stack)-1]
			case grey:
				// The cycle is the part of the stack from e.to, plus e.
				start := slices.IndexFunc(stack, func(s edge) bool { return s.from == e.to })
				var cyc []edge
				if start >= 0 {
					cyc = append(cyc, stack[start:]...)
				}
				cyc = append(cyc, e)
				names := []string{cyc[0].from}
				for _, c := range cyc {
					names = append(names, c.to)
				}
				key := canonical(names[:len(names)-1])
				// Report it at the first call of the cycle in a file being
				// checked: the cycle may close in a context file.
				at := slices.IndexFunc(cyc, func(c edge) bool { return reported[c.file] })
				if !seenCycle[key] && at >= 0 {
					seenCycle[key] = true
					problems = append(problems, Problem{File: cyc[at].file, Path: cyc[at].path, Warning: true,
						Msg: "chains call each other in a cycle: " + strings.Join(names, " -> ") + " (the call would be refused at run time)"})
				}
			}
		}
		color[id] = black
	}
	for _, id := range slices.Sorted(maps.Keys(out)) {
		if color[id] == white {
			visit(id)
		}
	}
	return problems
}

// canonical names a cycle independently of where it starts.
func canonical(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	min := 0
	for i, id := range ids {
		if id < ids[min] {
			min = i
		}
	}
	rot := append(slices.Clone(ids[min:]), ids[:min]...)
	return strings.Join(rot, ">")
}
