package components

import (
	"context"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
)

// WithNodeSteps returns ctx under which a run of engine e (chain chainID)
// reports its nodes as STEP_STARTED / STEP_FINISHED events into sink, as
// the nodes of a rulechain tool are reported (see NodeSteps). A host that
// runs a chain itself, such as the MCP server reporting a chain tool's
// progress, passes the returned context to the run.
func WithNodeSteps(ctx context.Context, e types.RuleEngine, chainID string, sink events.Sink) context.Context {
	names := map[string]string{}
	if e != nil {
		for _, n := range e.Definition().Metadata.Nodes {
			names[n.Id] = n.Name
		}
	}
	return withSteps(ctx, &stepRecorder{sink: sink, chainID: chainID, names: names})
}
