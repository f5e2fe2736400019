package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// mcpApprover answers the approvals and forms of a chain served over MCP
// (an agent's `approval` setting, a tool's `responseSchema`) by asking the
// MCP client, through the run's input hook, when its run cannot pause on
// them (a 2025-11-25 client's: it is asked with elicitation/create, and a
// client that cannot be asked leaves the call denied, saying what was
// asked). The run of a 2026-07-28 client is interruptible instead
// (mcp_interrupt_pause.go).
type mcpApprover struct{ asker ask.Asker }

// approveSchema asks to accept (run the call) or decline it, with an
// optional note.
var approveSchema = json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"A note for the agent, such as why not."}}}`)

// Approve implements tools.Approver.
func (a mcpApprover) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	q := ask.Question{ID: "approve_" + req.ToolCallID, Message: fmt.Sprintf("Approve %s %s?", req.Tool, req.OneLine()), Schema: approveSchema}
	form := len(req.ResponseSchema) > 0
	if form {
		q = ask.Question{ID: "form_" + req.ToolCallID, Message: fmt.Sprintf("%s asks for an answer (%s)", req.Tool, req.OneLine()), Schema: req.ResponseSchema}
	}
	// Asked from inside the agent's call, which cannot end its branch:
	// the run waits for the answer in this process.
	ans, err := ask.Ask(ask.WithAsker(withinCall(ctx), a.asker), q)
	if err != nil {
		return tools.ApprovalDecision{}, err
	}
	var note struct {
		Reason string `json:"reason"`
	}
	if len(ans.Content) > 0 && !form {
		_ = json.Unmarshal(ans.Content, &note)
	}
	switch {
	case ans.Action != ask.Accept:
		reason := "the MCP client's user " + string(ans.Action) + "d"
		if ans.Action == ask.Cancel {
			reason = "the MCP client's user dismissed the question"
		}
		return tools.ApprovalDecision{Approved: false, Reason: reason}, nil
	case form:
		return tools.ApprovalDecision{Approved: true, Answer: ans.Content}, nil
	}
	return tools.ApprovalDecision{Approved: true, Reason: note.Reason}, nil
}

type withinCallKey struct{}

// withinCall marks ctx as a question asked from inside a tool call (an
// approval, a form): the run cannot pause on it as a checkpoint.
func withinCall(ctx context.Context) context.Context {
	return context.WithValue(ctx, withinCallKey{}, true)
}

// askedWithinCall reports whether a question is asked from inside a tool
// call, not by a chain node.
func askedWithinCall(ctx context.Context) bool {
	in, _ := ctx.Value(withinCallKey{}).(bool)
	return in || tools.CallFrom(ctx) != nil
}
