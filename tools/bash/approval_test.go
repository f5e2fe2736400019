package bash

import (
	"slices"
	"testing"
)

func TestMatchCommands(t *testing.T) {
	tool := newTool(t, `{"sandbox":"off"}`)
	for _, tc := range []struct {
		command  string
		patterns []string
		want     []string
	}{
		{"git status && git push origin main", []string{"git push"}, []string{"git push origin main"}},
		// Options cannot slip a command past its pattern.
		{"git -c core.pager=x push", []string{"git push"}, []string{"git -c core.pager=x push"}},
		{"/usr/bin/git push", []string{"git push"}, []string{"/usr/bin/git push"}},
		{"ls | xargs rm", []string{"rm"}, []string{"rm (arguments read from input)"}},
		{"echo 'a  b'", nil, []string{"echo a  b"}},
		{"ls; cat f", nil, []string{"ls", "cat f"}},
		{"git status", []string{"git push"}, nil},
		{"kubectl delete pod x", []string{"kubectl* delete"}, []string{"kubectl delete pod x"}},
		// What cannot be judged is always selected.
		{"$CMD push", []string{"git push"}, []string{"$CMD push"}},
	} {
		got := tool.MatchCommands(tc.command, tc.patterns)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q %v: %q, want %q", tc.command, tc.patterns, got, tc.want)
		}
	}
}

// With interpreters on, the commands that run code the policy cannot read
// need a person when the agent has approvals configured.
func TestApprovalRequiredForInterpreters(t *testing.T) {
	off := newTool(t, `{"sandbox":"off"}`)
	on := newTool(t, `{"sandbox":"off","interpreters":"on"}`)
	args := []byte(`{"command":"ls && python3 -c 'print(1)'"}`)
	if got := off.ApprovalRequired(args); got != nil {
		t.Fatalf("interpreters off (refused anyway): %q", got)
	}
	if got := on.ApprovalRequired(args); len(got) != 1 || got[0] != "python3 -c 'print(1)'" {
		t.Fatalf("interpreters on: %q", got)
	}
	if got := on.ApprovalRequired([]byte(`{"command":"ls -la"}`)); got != nil {
		t.Fatalf("no interpreter: %q", got)
	}
}
