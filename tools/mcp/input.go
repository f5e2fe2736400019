package mcptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/ask"
)

// elicitation answers a server's questions: the input_required of a
// 2026-07-28 server, or the elicitation/create request of an older one. It
// is the seam where a person answers a remote tool: it hands the question
// to the ask.Asker of the calling run, or else to its tools.Approver (a run
// started by a client that answers interrupts: the question becomes an
// AG-UI interrupt, a form or an approval). Without either, the question
// fails the call with an *ask.NotAskedError that says what was asked, which
// becomes the tool error the model reads.
//
// Registering it declares the elicitation capability: a server may ask,
// and whether a person answers is the run's to say.
//
// A question arrives in the context of the call it belongs to, except from
// an older server that sends it on its standalone stream (the HTTP GET
// stream, or stdio); it is then put to the run of the one call in flight,
// and refused when several are, since it cannot be told whose it is.
type elicitation struct {
	server string
	calls  *inflight
}

// inflight tracks the contexts of the calls in progress on a conn.
type inflight struct {
	mu   sync.Mutex
	seq  int
	ctxs map[int]context.Context
}

// add records a call's context; the returned function removes it.
func (f *inflight) add(ctx context.Context) (done func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctxs == nil {
		f.ctxs = map[int]context.Context{}
	}
	f.seq++
	id := f.seq
	f.ctxs[id] = ctx
	return func() {
		f.mu.Lock()
		delete(f.ctxs, id)
		f.mu.Unlock()
	}
}

// sole is the context of the only call in progress, or nil.
func (f *inflight) sole() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ctxs) != 1 {
		return nil
	}
	for _, ctx := range f.ctxs {
		return ctx
	}
	return nil
}

// Elicit implements client.ElicitationHandler.
func (e elicitation) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if tools.CallFrom(ctx) == nil && e.calls != nil {
		if call := e.calls.sole(); call != nil {
			ctx = call
		}
	}
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
	asker := ask.From(ctx)
	if asker == nil {
		if ap := tools.ApproverFrom(ctx); ap != nil {
			asker = approverAsker{approver: ap, call: tools.CallFrom(ctx)}
		}
	}
	if asker == nil {
		return nil, &ask.NotAskedError{Question: q, Why: "this agent run cannot ask a person (it was not started by a client that answers interrupts)"}
	}
	a, err := ask.Ask(ask.WithAsker(ctx, asker), q)
	if err != nil {
		return nil, err
	}
	res := &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseAction(a.Action)}}
	if a.Action == ask.Accept {
		content := map[string]any{}
		if len(a.Content) > 0 {
			if err := json.Unmarshal(a.Content, &content); err != nil {
				return nil, fmt.Errorf("the answer's content is not an object: %w", err)
			}
		}
		withDefaults(content, q.Schema)
		res.Content = content
	}
	return res, nil
}

// withDefaults fills the fields an accepted answer leaves out with the
// defaults the question's schema gives them (SEP-1034): a person who
// accepts a form accepts what it showed.
func withDefaults(content map[string]any, schema json.RawMessage) {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return
	}
	for name, p := range s.Properties {
		if _, given := content[name]; given || len(p.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			content[name] = v
		}
	}
}

// notAsked finds the question a call failed on, if any.
func notAsked(err error) (*ask.NotAskedError, bool) {
	var na *ask.NotAskedError
	return na, errors.As(err, &na)
}

// approverAsker puts a remote tool's question to the run's tools.Approver
// (governance: the run pauses with an AG-UI interrupt): a question with
// fields is a form whose answer is the content, one without is an approval
// to accept or decline. The interrupt names the tool call, and carries the
// question in its arguments.
type approverAsker struct {
	approver tools.Approver
	call     *tools.CallInfo
}

func (a approverAsker) Ask(ctx context.Context, q ask.Question) (ask.Answer, error) {
	args, _ := json.Marshal(map[string]string{"question": q.Message})
	req := tools.ApprovalRequest{ToolType: tools.TypeMCP, Args: args, Timeout: tools.DefaultApprovalTimeout}
	if a.call != nil {
		req.ToolCallID, req.Tool = a.call.ToolCallID, a.call.ToolName
	}
	if hasFields(q.Schema) {
		req.ResponseSchema = q.Schema
	}
	d, err := a.approver.Approve(ctx, req)
	switch {
	case err != nil:
		return ask.Answer{}, err
	case !d.Approved:
		return ask.Answer{Action: ask.Decline}, nil
	case req.ResponseSchema != nil:
		return ask.Answer{Action: ask.Accept, Content: d.Answer}, nil
	}
	return ask.Answer{Action: ask.Accept}, nil
}

// hasFields reports whether an object schema asks for any field.
func hasFields(schema json.RawMessage) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	return json.Unmarshal(schema, &s) == nil && len(s.Properties) > 0
}
