package aguicheck

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDifferential runs every whole-run case through both the Go checker and
// the real @ag-ui/client (one node process for all of them) and requires the
// same verdict.
//
// Where they agree by construction rather than by nature, the harness does
// the work: the client only warns about unknown fields, unknown events and
// deprecated shapes, and the harness turns those warnings into rejections.
//
// Where they intentionally differ (the case's onlyGo says why), the Go
// checker must reject and the client accept: ruleagent's contract (one run,
// ending with exactly one terminal event) is ours, not AG-UI's.
//
// Fragment cases are not sent: the client always judges a whole stream.
func TestDifferential(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var cases []ruleCase
	var streams [][][]byte
	for _, c := range allCases() {
		if c.opts.Fragment {
			continue
		}
		cases = append(cases, c)
		streams = append(streams, c.events)
	}
	verdicts := clientVerdictsOrSkip(t, root, streams)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			compareVerdicts(t, c, CheckWith(c.events, c.opts), verdicts[i])
		})
	}
}

func compareVerdicts(t *testing.T, c ruleCase, goErrs []error, client clientVerdict) {
	t.Helper()
	if c.onlyGo != "" {
		if goErrs == nil || !client.Accepted {
			t.Errorf("documented difference (%s) no longer holds: Go violations %v; client accepted=%v %s",
				c.onlyGo, goErrs, client.Accepted, client.Error)
		}
		return
	}
	if (goErrs == nil) != client.Accepted {
		t.Fatalf("verdicts differ:\n  Go: %v\n  client: accepted=%v %s", goErrs, client.Accepted, client.Error)
	}
	if goErrs == nil {
		return
	}
	// Both reject. The client stops at its first error, and the harness
	// names the event it was processing: it must be the event of Go's first
	// violation. Where the Go checker uses the client's own words (frame,
	// chunk and verify stages), the text must match too.
	var first *Violation
	if !errors.As(goErrs[0], &first) {
		t.Fatalf("not a *Violation: %v", goErrs[0])
	}
	if !strings.Contains(client.Error, fmt.Sprintf("event %d (", first.Index)) {
		t.Errorf("the client rejected another event than Go's first violation:\n  Go: %v\n  client: %s", first, client.Error)
	}
	verbatim := first.Stage == StageVerify || first.Stage == StageChunks ||
		(first.Stage == StageFrame && strings.HasPrefix(first.Message, "Invalid event"))
	if verbatim && !strings.Contains(client.Error, first.Message) {
		t.Errorf("the client's message differs:\n  Go: %s\n  client: %s", first.Message, client.Error)
	}
}

// TestDifferentialFullRun sends the realistic run and some mutations of it
// that each break one rule, to check agreement on a long stream.
func TestDifferentialFullRun(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mutations := []struct {
		name   string
		at     int    // index in fullRun to change, -1 for none
		with   string // the event put there, "" to delete the one there
		insert bool   // put with before the event at index at, rather than replacing it
	}{
		{"unchanged", -1, "", false},
		{"reasoning never closed", 7, "", false},
		{"parallel tool call never ended", 18, "", false},
		{"subagent step closed by the parent", 34, `{"type":"STEP_FINISHED","stepName":"tools"}`, false},
		{"subagent text closed under another tag", 29, `{"type":"TEXT_MESSAGE_END","messageId":"m2","subagentRunId":"sub-2"}`, false},
		{"subagent finished twice", 36, `{"type":"SUBAGENT_FINISHED","subagentRunId":"sub-1"}`, true},
		{"subagent text after the subagent finished", 36, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m2","delta":"late"}`, true},
		{"float timestamp", 0, `{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1","timestamp":1767225600000.25}`, false},
		{"usage in the wrong place", 41, `{"type":"CUSTOM","name":"ruleagent.node","value":{},"usage":[]}`, false},
		{"events after the terminal event", 44, `{"type":"CUSTOM","name":"late","value":1}`, true},
	}
	var streams [][][]byte
	for _, m := range mutations {
		events := append([][]byte{}, fullRun...)
		switch {
		case m.at < 0:
		case m.insert:
			events = append(events[:m.at], append([][]byte{[]byte(m.with)}, events[m.at:]...)...)
		case m.with == "":
			events = append(events[:m.at], events[m.at+1:]...)
		default:
			events[m.at] = []byte(m.with)
		}
		streams = append(streams, events)
	}
	verdicts := clientVerdictsOrSkip(t, root, streams)
	for i, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			goErrs := Check(streams[i])
			if (m.at < 0) != (goErrs == nil) {
				t.Errorf("Go checker: want valid=%v, got %v", m.at < 0, goErrs)
			}
			compareVerdicts(t, ruleCase{name: m.name, events: streams[i]}, goErrs, verdicts[i])
		})
	}
}
