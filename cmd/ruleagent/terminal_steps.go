package main

import (
	"cmp"
	"fmt"
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/server"
)

// chainSteps shows the nodes of a run's own chain as they tell their
// result, as the editor's trace does: name, relation, duration, and the
// error of a node that failed. Agent nodes are left out: their text, tool
// calls and usage already tell their part.
func chainSteps(t *terminal, e types.RuleEngine) func(server.NodeStep) {
	type node struct {
		name  string
		agent bool
	}
	nodes := map[string]node{}
	for _, n := range e.Definition().Metadata.Nodes {
		nodes[n.Id] = node{name: n.Name, agent: n.Type == "ai/agent"}
	}
	return func(st server.NodeStep) {
		n := nodes[st.NodeID]
		if n.agent {
			return
		}
		t.nodeStep(cmp.Or(n.name, st.NodeID), st)
	}
}

// nodeStep prints one node of the run's chain:
// `· Check the order id → True (<1ms)`.
func (t *terminal) nodeStep(name string, st server.NodeStep) {
	t.mu.Lock()
	defer t.mu.Unlock()
	took := "<1ms"
	if st.Duration >= time.Millisecond {
		took = st.Duration.String()
	}
	mark, rel := t.paint(dim, "·"), st.Relation
	if st.Error != "" || st.Relation == types.Failure {
		mark, rel = t.paint(red, "✗"), t.paint(red, rel)
	}
	line := fmt.Sprintf("%s %s → %s %s", mark, name, rel, t.paint(dim, "("+took+")"))
	if st.Error != "" {
		line += ": " + shorten(oneLine(st.Error), 300)
	}
	t.line(t.src(""), line)
}
