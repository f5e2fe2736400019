package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ruleagent/ruleagent/aspects"
	"github.com/ruleagent/ruleagent/events"
)

// guardrail refuses any call whose arguments hold "a":666, and records
// the arguments it saw.
type guardrail struct {
	aspects.Everywhere
	seen []string
}

func (*guardrail) Order() int { return 1 }
func (g *guardrail) BeforeToolCall(_ context.Context, _ *aspects.Point, c *aspects.ToolCall) error {
	g.seen = append(g.seen, string(c.Args))
	if strings.Contains(string(c.Args), `"a":666`) {
		return errors.New("666 is not allowed")
	}
	return nil
}

// Arguments a person edits at an approval pass the ToolCallBefore aspects
// as the model's did: a guardrail refuses the edited call too.
func TestEditedArgumentsPassToolCallBefore(t *testing.T) {
	g := &guardrail{}
	m, err := aspects.NewManager(g)
	if err != nil {
		t.Fatal(err)
	}
	var rec events.Recorder
	r := &Run{Sink: &rec, Aspects: m, Approval: &ApprovalPolicy{Tools: []string{"add"}}}
	ctx := WithApprover(context.Background(), answering{ApprovalDecision{Approved: true, Args: json.RawMessage(`{"a":666,"b":2}`)}})
	out := testSet(t, adder()).Invoke(ctx, r, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
	if !out.IsError || !strings.Contains(out.Content, "666 is not allowed") || len(g.seen) != 2 || g.seen[1] != `{"a":666,"b":2}` {
		t.Fatalf("outcome %+v; the guardrail saw %v", out, g.seen)
	}
}

// A ToolCallAfter rewrite is a result like any other: scrubbed of secrets
// and truncated before the client sees it and the model reads it.
func TestToolCallAfterRewriteIsScrubbedAndTruncated(t *testing.T) {
	m, err := aspects.NewManager(&rewriter{after: "SECRET " + strings.Repeat("x", 500)})
	if err != nil {
		t.Fatal(err)
	}
	var rec events.Recorder
	r := &Run{Sink: &rec, Aspects: m, Scrubber: upper{}, MaxOutput: 100}
	out := testSet(t, adder()).Invoke(context.Background(), r, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`)})
	var res events.Event
	for _, e := range rec.Events() {
		if e.Type == events.ToolCallResult {
			res = e
		}
	}
	if !strings.HasPrefix(out.Content, "[REDACTED] x") || !strings.Contains(out.Content, "truncated") || res.Content != out.Content || !res.Meta.Truncated {
		t.Fatalf("outcome %q, event %+v", out.Content, res)
	}
}

// A call of a tool withdrawn from the turn's offer is refused, not run.
func TestWithdrawnCallIsRefused(t *testing.T) {
	var rec events.Recorder
	out := testSet(t, adder()).Invoke(context.Background(), &Run{Sink: &rec}, Call{ID: "c", Name: "add", Args: json.RawMessage(`{"a":1,"b":2}`), Withdrawn: true})
	if !out.IsError || !errors.Is(out.Err, ErrNotFound) || !strings.Contains(out.Content, "not offered") {
		t.Fatalf("outcome %+v", out)
	}
}
