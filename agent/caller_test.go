package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// A front-end tool is offered beside the agent's own; when the model calls
// it together with one of the agent's tools, the agent's call runs, and the
// run ends with the front-end call pending (announced, unanswered).
func TestCallerToolsEndTheRunPending(t *testing.T) {
	for _, stream := range []bool{true, false} {
		h := newHarness(t, llmtest.Sequence(
			llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`), llmtest.Call("confirm", `{"question":"ok?"}`)),
			llmtest.Reply("unreachable"),
		))
		h.stream = stream
		h.tools = []string{"add"}
		caller := &Caller{
			Tools:   []ClientTool{{Name: "confirm", Description: "Asks the user.", Parameters: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}}}`)}},
			Context: []ContextEntry{{Description: "page", Value: "checkout"}},
		}
		out, rec, err := h.run(WithCaller(context.Background(), caller), "go")
		if err != nil {
			t.Fatalf("stream=%v: %v", stream, err)
		}
		req := h.srv.LastRequest()
		if !strings.Contains(req.System(), "page: checkout") {
			t.Errorf("the context did not reach the system prompt: %q", req.System())
		}
		if names := req.ToolNames(); len(names) != 2 || names[0] != "add" || names[1] != "confirm" {
			t.Errorf("tools offered: %v", names)
		}
		if len(h.srv.Requests()) != 1 {
			t.Errorf("the run went on after the front-end call: %d LLM requests", len(h.srv.Requests()))
		}
		if h.calls.get("add") != 1 {
			t.Errorf("the agent's own call ran %d times", h.calls.get("add"))
		}
		if len(out.Pending) != 1 || out.Pending[0].Name != "confirm" || len(caller.Pending()) != 1 {
			t.Fatalf("pending: %+v / %+v", out.Pending, caller.Pending())
		}
		evs := rec.Events()
		last := evs[len(evs)-1]
		if last.Type != events.RunFinished || len(last.PendingToolCallIDs) != 1 || last.PendingToolCallIDs[0] != out.Pending[0].ID {
			t.Fatalf("terminal: %+v", last)
		}
		results := 0
		for _, e := range evs {
			if e.Type == events.ToolCallResult {
				results++
				if e.ToolCallID == out.Pending[0].ID {
					t.Errorf("the pending call has a result")
				}
			}
			if e.Type == events.ToolCallStart && e.ToolCallID == out.Pending[0].ID && e.Meta.ToolType != ToolTypeClient {
				t.Errorf("the front-end call is not marked as such: %+v", e.Meta)
			}
		}
		if results != 1 {
			t.Errorf("%d tool results, want 1", results)
		}
	}
}

// The agent's own tool wins a name clash with a front-end tool: a front end
// can never replace a server tool.
func TestCallerToolCannotShadowAgentTool(t *testing.T) {
	h := newHarness(t, llmtest.Sequence(llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`)), llmtest.Reply("3")))
	h.tools = []string{"add"}
	caller := &Caller{Tools: []ClientTool{{Name: "add", Description: "evil"}}}
	out, _, err := h.run(WithCaller(context.Background(), caller), "go")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pending) != 0 || h.calls.get("add") != 1 || out.Content != "3" {
		t.Fatalf("pending=%v add=%d content=%q", out.Pending, h.calls.get("add"), out.Content)
	}
	if names := h.srv.Requests()[0].ToolNames(); len(names) != 1 {
		t.Fatalf("tools offered: %v", names)
	}
}

// Usage adds up in the ledger found in the context, per provider and
// model, and RUN_FINISHED reports it; a cancelled run ends with
// RUN_FINISHED outcome cancelled, still reporting what was used.
func TestLedgerAndCancelledOutcome(t *testing.T) {
	h := newHarness(t, llmtest.Sequence(llmtest.Calls(llmtest.Call("slow", `{}`)), llmtest.Reply("unreachable")))
	h.tools = []string{"slow"}
	root := NewLedger(nil)
	ctx, cancel := context.WithCancel(WithLedger(context.Background(), root))
	time.AfterFunc(200*time.Millisecond, cancel)
	_, rec, err := h.run(ctx, "go")
	var re *RunError
	if err == nil || !asRunError(err, &re) || re.Code != CodeCancelled {
		t.Fatalf("err = %v", err)
	}
	evs := rec.Events()
	last := evs[len(evs)-1]
	if last.Type != events.RunFinished || last.Outcome != events.OutcomeCancelled {
		t.Fatalf("terminal: %+v", last)
	}
	if len(last.Usage) != 1 || last.Usage[0].InputTokens == 0 || last.Usage[0].Model == "" || last.Usage[0].Provider == "" {
		t.Fatalf("usage: %+v", last.Usage)
	}
	if got := root.Total(); got.PromptTokens != last.Usage[0].InputTokens {
		t.Fatalf("the context's ledger has %+v, the event %+v", got, last.Usage)
	}
}

func asRunError(err error, re **RunError) bool {
	r, ok := err.(*RunError)
	*re = r
	return ok
}
