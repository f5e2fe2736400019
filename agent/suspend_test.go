package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
	"github.com/ruleagent/ruleagent/tools"
)

// decisions answers approvals by the call's arguments: {"a":1,...} is
// approved, anything else denied.
func decide(req tools.ApprovalRequest) tools.ApprovalDecision {
	if strings.Contains(string(req.Args), `"a":1`) {
		return tools.ApprovalDecision{Approved: true}
	}
	return tools.ApprovalDecision{Reason: "not that one"}
}

// blockingApprover answers at once, as a person waited for would.
type blockingApprover struct{}

func (blockingApprover) Approve(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	return decide(req), nil
}

// pausingApprover raises an interrupt per call and pauses the run; resumed,
// it answers the interrupts it raised.
type pausingApprover struct {
	mu     sync.Mutex
	raised map[string]tools.ApprovalRequest
}

func (p *pausingApprover) Approve(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalDecision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if req.InterruptID != "" {
		asked, ok := p.raised[req.InterruptID]
		if !ok || asked.ToolCallID != req.ToolCallID {
			return tools.ApprovalDecision{}, fmt.Errorf("interrupt %s was not raised for call %s", req.InterruptID, req.ToolCallID)
		}
		return decide(req), nil
	}
	if p.raised == nil {
		p.raised = map[string]tools.ApprovalRequest{}
	}
	id := "int-" + req.ToolCallID
	p.raised[id] = req
	return tools.ApprovalDecision{}, &tools.PauseError{InterruptID: id}
}

// A run whose calls need approval, run once with an approver that waits
// (the answer comes at once) and once with one that pauses: the paused
// run's suspension, through JSON, resumed (as often as it pauses again),
// streams exactly the events of the run that waited, apart from the
// terminal event the pause leaves out; makes the same calls (each approved
// call once); and ends with the same answer and usage. Parallel and
// sequential turns.
func TestSuspendedRunGoesOnAsIfItHadWaited(t *testing.T) {
	script := llmtest.ScriptFunc(func(r *llmtest.Request) llmtest.Response {
		if res := r.ToolResults(); len(res) > 0 {
			var parts []string
			for _, m := range res {
				parts = append(parts, m.Content)
			}
			return llmtest.Reply("results: " + strings.Join(parts, " | "))
		}
		return llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`), llmtest.Call("add", `{"a":3,"b":4}`))
	})
	for _, parallel := range []bool{true, false} {
		t.Run(fmt.Sprintf("parallel=%v", parallel), func(t *testing.T) {
			// One scripted model each, so that both runs get the same call
			// ids.
			harness := func() (*harness, *Agent) {
				h := newHarness(t, script)
				h.tools = []string{"add"}
				h.cfg.ParallelToolCalls = parallel
				h.cfg.Approval = &tools.ApprovalPolicy{Tools: []string{"add"}}
				return h, h.agent()
			}
			hw, a := harness()
			in := Input{Messages: []events.Message{{Role: events.RoleUser, Content: "add them"}}, SystemPrompt: "You are a test agent.",
				Stream: true, RunID: "run-1", ThreadID: "thread-1"}

			var waited events.Recorder
			want, err := a.Run(tools.WithApprover(context.Background(), blockingApprover{}), in, &waited)
			if err != nil {
				t.Fatal(err)
			}
			calledWaiting := hw.calls.get("add")
			h, a := harness()

			var paused events.Recorder
			ap := &pausingApprover{}
			ctx := tools.WithApprover(context.Background(), ap)
			_, err = a.Run(ctx, in, &paused)
			pauses := 0
			for {
				var se *SuspendedError
				if !errors.As(err, &se) {
					break
				}
				pauses++
				if pauses > 2 {
					t.Fatal("the run paused more than once per call")
				}
				b, jerr := json.Marshal(se.Suspension)
				if jerr != nil {
					t.Fatal(jerr)
				}
				var s Suspension
				if jerr := json.Unmarshal(b, &s); jerr != nil {
					t.Fatal(jerr)
				}
				var out *Output
				out, err = a.Resume(ctx, in, &s, &paused)
				if err == nil {
					if out.Content != want.Content || out.Steps != want.Steps || out.ToolCalls != want.ToolCalls || out.Usage != want.Usage {
						t.Errorf("resumed output %+v, want %+v", out.RunOutput, want.RunOutput)
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if wantPauses := map[bool]int{true: 1, false: 2}[parallel]; pauses != wantPauses {
				t.Errorf("%d pauses, want %d", pauses, wantPauses)
			}
			if got := h.calls.get("add"); got != calledWaiting || got != 1 {
				t.Errorf("add ran %d times resumed, %d times waiting; want once (the approved call)", got, calledWaiting)
			}
			checkStream(t, &paused)
			w, g := comparable(waited.Events(), parallel), comparable(paused.Events(), parallel)
			if parallel {
				// The calls of a parallel turn end in any order.
				slices.Sort(w)
				slices.Sort(g)
			}
			if !reflect.DeepEqual(w, g) {
				t.Errorf("events differ:\nwaited %v\npaused %v", w, g)
			}
		})
	}
}

// comparable is the events without their times and the scripted model's
// address; a parallel turn's results without their message ids (the
// calls end in any order).
func comparable(evs []events.Event, parallel bool) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		e.Timestamp, e.Meta.DurationMs = 0, 0
		e.Usage = slices.Clone(e.Usage)
		for j := range e.Usage {
			e.Usage[j].Provider = ""
		}
		if parallel && e.Type == events.ToolCallResult {
			e.MessageID = ""
		}
		out[i] = string(e.AppendJSON(nil))
	}
	return out
}

// A suspension that does not hold together is refused when resumed, with
// a run error in the run's stream (it is open where the run paused): the
// turn's calls must be those of its last message, each with at most one
// outcome, at least one waiting.
func TestSuspensionCheck(t *testing.T) {
	h := newHarness(t, llmtest.Always(llmtest.Calls(llmtest.Call("add", `{"a":1,"b":2}`), llmtest.Call("add", `{"a":3,"b":4}`))))
	h.tools = []string{"add"}
	h.cfg.ParallelToolCalls = false
	h.cfg.Approval = &tools.ApprovalPolicy{Tools: []string{"add"}}
	a := h.agent()
	in := Input{Messages: []events.Message{{Role: events.RoleUser, Content: "add"}}, RunID: "run-1", ThreadID: "t"}
	_, err := a.Run(tools.WithApprover(context.Background(), &pausingApprover{}), in, events.Discard)
	var se *SuspendedError
	if !errors.As(err, &se) {
		t.Fatalf("no suspension: %v", err)
	}
	good, _ := json.Marshal(se.Suspension)
	for name, spoil := range map[string]func(s *Suspension){
		"no conversation":         func(s *Suspension) { s.Messages = nil },
		"no run id":               func(s *Suspension) { s.RunID = "" },
		"a call of another turn":  func(s *Suspension) { s.Calls[0].Call.ID = "other" },
		"a call missing":          func(s *Suspension) { s.Calls = s.Calls[:1] },
		"nothing waits":           func(s *Suspension) { s.Calls[0].Paused = nil },
		"a result and a wait":     func(s *Suspension) { s.Calls[0].Result = &events.Message{Role: events.RoleTool} },
		"a wait for nothing":      func(s *Suspension) { s.Calls[0].Paused.InterruptID = "" },
		"firstNew past the end":   func(s *Suspension) { s.FirstNew = len(s.Messages) + 1 },
		"no outcome, none before": func(s *Suspension) { s.Calls[0], s.Calls[1] = s.Calls[1], s.Calls[0] },
	} {
		var s Suspension
		_ = json.Unmarshal(good, &s)
		spoil(&s)
		var rec events.Recorder
		_, err := a.Resume(context.Background(), in, &s, &rec)
		var re *RunError
		if !errors.As(err, &re) || re.Code != CodeInternal || len(rec.Types()) != 1 || rec.Types()[0] != events.RunError {
			t.Errorf("%s: %v, events %v", name, err, rec.Types())
		}
	}
	var s Suspension
	_ = json.Unmarshal(good, &s)
	if err := s.Check(); err != nil {
		t.Errorf("the suspension as made: %v", err)
	}
}
