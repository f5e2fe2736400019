package components

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rulego/rulego/api/types"

	"github.com/ruleagent/ruleagent/events"
	"github.com/ruleagent/ruleagent/internal/llmtest"
)

// TestAgentDrivesFileToolsAndBash: a scripted model writes a file, edits
// it, reads it back, runs a command over it, then answers. The file on
// disk and the AG-UI events of every call are checked.
func TestAgentDrivesFileToolsAndBash(t *testing.T) {
	ws := t.TempDir()
	secret := "sk-e2e-abcdefghijklmnopqrstuv"
	srv := llmtest.NewServer(t, llmtest.Sequence(
		llmtest.Calls(llmtest.Call("write", `{"path":"notes/plan.md","content":"# Plan\n- draft\n- review\n"}`)),
		llmtest.Calls(llmtest.Call("edit", `{"operation":"search","path":"notes/plan.md","search":"- draft","replace":"- write the draft"}`)),
		llmtest.Calls(llmtest.Call("read", `{"path":"notes/plan.md"}`), llmtest.Call("bash", `{"command":"wc -l notes/plan.md && echo key=`+secret+`"}`)),
		llmtest.Calls(llmtest.Call("bash", `{"command":"rm -rf notes"}`)),
		llmtest.Reply("The plan has 3 lines."),
	))
	id, dsl := agentChain(t, srv.URL, map[string]any{
		"workspace": ws,
		"tools": []any{
			map[string]any{"type": "builtin", "name": "write"},
			map[string]any{"type": "builtin", "name": "edit"},
			map[string]any{"type": "builtin", "name": "read"},
			map[string]any{"type": "builtin", "name": "bash", "config": map[string]any{"timeout": "10s"}},
		},
	})
	e := newEngine(t, id, dsl)
	r := send(t, context.Background(), e, "Write a plan, fix it, and count its lines.", nil, true)
	end := oneTerminal(t, r, types.Success)
	if end.msg.GetData() != "The plan has 3 lines." || end.msg.Metadata.GetValue("toolCalls") != "5" {
		t.Fatalf("%q %v", end.msg.GetData(), end.msg.Metadata.Values())
	}

	b, err := os.ReadFile(filepath.Join(ws, "notes", "plan.md"))
	if err != nil || string(b) != "# Plan\n- write the draft\n- review\n" {
		t.Fatalf("file on disk: %q %v", b, err)
	}

	// What the model read back from each call.
	reqs := srv.Requests()
	results := reqs[3].ToolResults()
	if len(results) != 2 || !strings.Contains(results[0].Content, "- write the draft") {
		t.Fatalf("read result: %+v", results)
	}
	if !strings.Contains(results[1].Content, "3 notes/plan.md") || strings.Contains(results[1].Content, secret) {
		t.Fatalf("bash result (count, and the key scrubbed): %q", results[1].Content)
	}
	refused := reqs[4].ToolResults()[0].Content
	if !strings.Contains(refused, "permission_denied") || !strings.Contains(refused, "destructive") {
		t.Fatalf("rm -rf was not refused: %q", refused)
	}
	if _, err := os.Stat(filepath.Join(ws, "notes")); err != nil {
		t.Fatal("the refused command removed the directory")
	}

	// Every call: START, ARGS, END, then RESULT, with the provider's id.
	checkEvents(t, &r.rec)
	type call struct {
		name   string
		types  []events.Type
		result events.Event
	}
	calls := map[string]*call{}
	var order []string
	for _, ev := range r.rec.Events() {
		switch ev.Type {
		case events.ToolCallStart:
			calls[ev.ToolCallID] = &call{name: ev.ToolCallName}
			order = append(order, ev.ToolCallID)
			if ev.Meta.ToolType != "builtin" {
				t.Fatalf("toolType %q", ev.Meta.ToolType)
			}
			fallthrough
		case events.ToolCallArgs, events.ToolCallEnd:
			calls[ev.ToolCallID].types = append(calls[ev.ToolCallID].types, ev.Type)
		case events.ToolCallResult:
			calls[ev.ToolCallID].types = append(calls[ev.ToolCallID].types, ev.Type)
			calls[ev.ToolCallID].result = ev
		}
	}
	wantNames := []string{"write", "edit", "read", "bash", "bash"}
	if len(order) != len(wantNames) {
		t.Fatalf("%d calls", len(order))
	}
	for i, id := range order {
		c := calls[id]
		if c.name != wantNames[i] {
			t.Fatalf("call %d is %s, want %s", i, c.name, wantNames[i])
		}
		tys := c.types
		if tys[0] != events.ToolCallStart || tys[len(tys)-2] != events.ToolCallEnd || tys[len(tys)-1] != events.ToolCallResult {
			t.Fatalf("call %s events %v", c.name, tys)
		}
		if c.result.Meta.IsError != (i == 4) {
			t.Fatalf("call %d isError=%v", i, c.result.Meta.IsError)
		}
	}
	if calls[order[4]].result.Meta.ErrorKind != "permission_denied" {
		t.Fatalf("refusal kind %q", calls[order[4]].result.Meta.ErrorKind)
	}
}
