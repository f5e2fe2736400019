package server

import (
	"time"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/server/live"
)

// traceNode is RuleGo's debug callback (types.Config.OnDebug): a node
// received a message (IN) or told its result (OUT). RuleGo calls it only
// for messages in debug mode, which the store turns on for its runs while
// a WebSocket client watches the chain (and a chain's own debugMode turns
// on for runs from its endpoints).
func (s *Store) traceNode(chainID, flow, nodeID string, msg types.RuleMsg, relation string, err error) {
	t := live.NodeTrace{ChainID: chainID, NodeID: nodeID, Flow: flow, Relation: relation, MsgID: msg.Id, Ts: msg.Ts}
	if msg.Metadata != nil {
		t.RunID = msg.Metadata.GetValue("runId")
	}
	if err != nil {
		t.Error = err.Error()
	}
	t.Ts = nowMillis()
	s.live.Node(t)
}

// nodeDone is the per-run node-completed callback: the node's duration,
// relation and error, in completion order, to the live trace and to
// onNode (nil for none) for the nodes of the run's own chain.
func (s *Store) nodeDone(chainID, runID string, onNode func(NodeStep)) func(types.RuleContext, types.RuleNodeRunLog) {
	return func(ctx types.RuleContext, l types.RuleNodeRunLog) {
		d := l.EndTs - l.StartTs
		cid := chainID
		if rc := ctx.RuleChain(); rc != nil {
			cid = rc.GetNodeId().Id
		}
		s.live.Node(live.NodeTrace{ChainID: cid, RunID: runID, MsgID: l.InMsg.Id, NodeID: l.Id, Flow: "DONE",
			Relation: l.RelationType, Error: l.Err, Ts: l.EndTs, DurationMs: &d})
		if onNode != nil && cid == chainID {
			onNode(NodeStep{NodeID: l.Id, Relation: l.RelationType, Error: l.Err, Duration: time.Duration(d) * time.Millisecond})
		}
	}
}
