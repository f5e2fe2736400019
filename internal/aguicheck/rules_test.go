package aguicheck

import (
	"errors"
	"strings"
	"testing"
)

// TestRules runs every case through the Go checker: a valid stream must yield
// no violation, an invalid one exactly the violations listed, in order.
func TestRules(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range allCases() {
		if seen[c.name] {
			t.Fatalf("two cases are named %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			assertViolations(t, CheckWith(c.events, c.opts), c.want)
		})
	}
}

func assertViolations(t *testing.T, got []error, want []string) {
	t.Helper()
	for i, err := range got {
		var v *Violation
		if !errors.As(err, &v) {
			t.Errorf("violation %d is a %T, not a *Violation: %v", i, err, err)
		}
		if i >= len(want) {
			t.Errorf("unexpected violation: %v", err)
			continue
		}
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("violation %d:\n got: %v\nwant: …%s…", i, err, want[i])
		}
	}
	for _, w := range want[min(len(got), len(want)):] {
		t.Errorf("missing violation: …%s…", w)
	}
}

func TestCheckJSONL(t *testing.T) {
	input := runStarted + "\n\n" +
		`{"type":"TEXT_MESSAGE_START","messageId":"m1"}` + "\r\n" +
		`{"type":"TEXT_MESSAGE_END","messageId":"m2"}` + "\n" +
		runFinished // no final newline
	assertViolations(t, CheckJSONL(strings.NewReader(input)), []string{
		"event 2 (TEXT_MESSAGE_END): Cannot send 'TEXT_MESSAGE_END' event: No active text message found with ID 'm2'.",
		"event 3 (RUN_FINISHED): Cannot send 'RUN_FINISHED' while text messages are still active: m1",
	})
	if errs := CheckJSONL(strings.NewReader(runStarted + "\n" + runFinished + "\n")); errs != nil {
		t.Errorf("valid JSONL stream: %v", errs)
	}
}

// TestViolationFields: callers can tell where and at which stage a rule broke.
func TestViolationFields(t *testing.T) {
	errs := Check(run(`{"type":"STEP_FINISHED","stepName":"s","extra":1}`))
	want := []Violation{
		{Index: 1, Type: "STEP_FINISHED", Stage: StageSchema},
		{Index: 1, Type: "STEP_FINISHED", Stage: StageVerify},
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d violations, want %d: %v", len(errs), len(want), errs)
	}
	for i, err := range errs {
		v := err.(*Violation)
		if v.Index != want[i].Index || v.Type != want[i].Type || v.Stage != want[i].Stage {
			t.Errorf("violation %d = {%d %s %s}, want {%d %s %s}", i, v.Index, v.Type, v.Stage, want[i].Index, want[i].Type, want[i].Stage)
		}
	}
}
