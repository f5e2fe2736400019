package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/tools/ask"
)

// elicitation answers a server's questions: the input_required of a
// 2026-07-28 server, or the elicitation/create request of an older one. It
// is the seam where a person answers a remote tool: it hands the question
// to the ask.Asker of the calling run (governance will put one there, which
// raises an approval or a form in the run's front end). Without one, the
// question fails the call with an *ask.NotAskedError that says what was
// asked, which becomes the tool error the model reads.
//
// Registering it declares the elicitation capability: a server may ask,
// and whether a person answers is the run's to say.
type elicitation struct{ server string }

// Elicit implements client.ElicitationHandler.
func (e elicitation) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	q := ask.Question{Message: req.Params.Message}
	if req.Params.Mode == mcp.ElicitationModeURL {
		// A URL to open (a sign-in, a payment): no person can be sent there
		// from an agent's run yet.
		return nil, &ask.NotAskedError{Question: ask.Question{Message: req.Params.Message + " (open " + req.Params.URL + ")"},
			Why: "MCP server " + e.server + " asked to open a URL, which an agent run cannot do"}
	}
	if req.Params.RequestedSchema != nil {
		b, err := json.Marshal(req.Params.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("the question's schema: %w", err)
		}
		q.Schema = b
	}
	if ask.From(ctx) == nil {
		return nil, &ask.NotAskedError{Question: q, Why: "this agent run cannot ask a person yet"}
	}
	a, err := ask.Ask(ctx, q)
	if err != nil {
		return nil, err
	}
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(a.Action)}}
	if a.Action == ask.Accept && len(a.Content) > 0 {
		var content any
		if err := json.Unmarshal(a.Content, &content); err != nil {
			return nil, fmt.Errorf("the answer's content: %w", err)
		}
		res.Content = content
	}
	return res, nil
}

// notAsked finds the question a call failed on, if any.
func notAsked(err error) (*ask.NotAskedError, bool) {
	var na *ask.NotAskedError
	return na, errors.As(err, &na)
}
