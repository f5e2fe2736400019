package events

// Nested is the Sink a sub-agent's run writes into: it places the nested
// run inside its parent's stream, as AG-UI attributes sub-agent work.
//
//   - RUN_STARTED becomes SUBAGENT_STARTED (with the sub-agent's name, the
//     parent tool call and, for deeper nesting, the parent sub-agent);
//   - RUN_FINISHED becomes SUBAGENT_FINISHED with the run's result, and
//     RUN_ERROR becomes SUBAGENT_ERROR;
//   - every other event is tagged with the sub-agent's run id, unless a
//     deeper level already tagged it;
//   - tool-call ids of the nested run are prefixed with its run id, because
//     providers may reuse ids such as "call_0" that the parent also uses.
type Nested struct {
	// Parent is the stream the nested events go to.
	Parent Sink
	// RunID is the sub-agent run's id (its subagentRunId).
	RunID string
	// Name and Description describe the sub-agent.
	Name        string
	Description string
	// ParentToolCallID is the tool call that started the sub-agent.
	ParentToolCallID string
	// ParentSubagentRunID is set when the caller is itself a sub-agent.
	ParentSubagentRunID string
}

// Emit implements Sink.
func (n *Nested) Emit(e Event) {
	switch e.Type {
	case RunStarted:
		if e.SubagentRunID == "" {
			n.Parent.Emit(Event{Type: SubagentStarted, Timestamp: e.Timestamp, SubagentRunID: n.RunID, Name: n.Name,
				Description: n.Description, ParentToolCallID: n.ParentToolCallID, ParentSubagentRunID: n.ParentSubagentRunID})
		}
		return
	case RunFinished:
		if e.SubagentRunID == "" {
			n.Parent.Emit(Event{Type: SubagentFinished, Timestamp: e.Timestamp, SubagentRunID: n.RunID, Result: e.Result, Meta: e.Meta})
		}
		return
	case RunError:
		if e.SubagentRunID == "" {
			n.Parent.Emit(Event{Type: SubagentError, Timestamp: e.Timestamp, SubagentRunID: n.RunID, Message: e.Message, Code: e.Code})
		}
		return
	}
	if e.SubagentRunID == "" {
		e.SubagentRunID = n.RunID
		if e.ToolCallID != "" {
			e.ToolCallID = n.RunID + ":" + e.ToolCallID
		}
		if e.ParentToolCallID != "" {
			e.ParentToolCallID = n.RunID + ":" + e.ParentToolCallID
		}
		if e.Meta.ToolCallID != "" {
			e.Meta.ToolCallID = n.RunID + ":" + e.Meta.ToolCallID
		}
	} else if e.Type == SubagentStarted && e.ParentSubagentRunID == "" {
		// A sub-agent of this sub-agent: say whose it is, and name the
		// tool call that started it as this level renamed it.
		e.ParentSubagentRunID = n.RunID
		if e.ParentToolCallID != "" {
			e.ParentToolCallID = n.RunID + ":" + e.ParentToolCallID
		}
	}
	n.Parent.Emit(e)
}
