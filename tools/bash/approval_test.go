package bash

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ruleagent/ruleagent/tools"
)

func commandArgs(command, workDir string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"command": command, "work_dir": workDir})
	return b
}

func TestMatchCommands(t *testing.T) {
	tool := newTool(t, `{"sandbox":"off"}`)
	all := tools.CommandSelection{All: true}
	pick := func(p ...string) tools.CommandSelection { return tools.CommandSelection{Patterns: p} }
	for _, tc := range []struct {
		command string
		sel     tools.CommandSelection
		want    []string
	}{
		{"git status && git push origin main", pick("git push"), []string{"git push origin main"}},
		// Options cannot slip a command past its pattern.
		{"git -c core.pager=x push", pick("git push"), []string{"git -c core.pager=x push"}},
		{"/usr/bin/git push", pick("git push"), []string{"/usr/bin/git push"}},
		{"ls | xargs rm", pick("rm"), []string{"rm (arguments read from input)"}},
		{"echo 'a  b'", all, []string{"echo a  b"}},
		{"ls; cat f", all, []string{"ls", "cat f"}},
		{"git status", pick("git push"), nil},
		{"git status", tools.CommandSelection{}, nil},
		{"kubectl delete pod x", pick("kubectl* delete"), []string{"kubectl delete pod x"}},
		// What cannot be judged is always selected.
		{"$CMD push", pick("git push"), []string{"$CMD push"}},
	} {
		got := tool.MatchCommands(commandArgs(tc.command, ""), tc.sel)
		if !slices.Equal(got.Commands, tc.want) {
			t.Errorf("%q %+v: %q, want %q", tc.command, tc.sel, got.Commands, tc.want)
		}
	}
}

// What a person approves is the whole parsed call: besides the commands,
// every redirect (nested scripts' too), every variable assignment and the
// directories it runs in, so that approving `echo hi` "always" never
// approves `echo hi > file`, the same command with GIT_SSH_COMMAND set,
// or in another work_dir.
func TestMatchCommandsCoversRedirectsAssignmentsAndDirectories(t *testing.T) {
	tool := newTool(t, `{"sandbox":"off"}`)
	if err := os.MkdirAll(filepath.Join(tool.ws.Dir(), "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	sel := tools.CommandSelection{Patterns: []string{"echo"}}
	for _, tc := range []struct {
		command, workDir string
		redirects        []string
		assignments      []string
		dirs             []string
	}{
		{"echo hi", "", nil, nil, []string{"."}},
		{"echo hi > out.txt 2>&1", "", []string{"> out.txt", "2>&1"}, nil, []string{"."}},
		{"exec >> /tmp/log; echo hi", "", []string{">> /tmp/log"}, nil, []string{"."}},
		{"sh -c 'echo hi > x'", "", []string{"> x"}, nil, []string{"."}},
		{"{ echo hi; } 2> err", "", []string{"2> err"}, nil, []string{"."}},
		{"GIT_SSH_COMMAND=evil echo hi", "", nil, []string{"GIT_SSH_COMMAND=evil"}, []string{"."}},
		{"export A=1; echo hi", "", nil, []string{"A=1"}, []string{"."}},
		{"echo hi", "sub", nil, nil, []string{"sub"}},
		{"echo hi", "./sub/", nil, nil, []string{"sub"}},
		{"cd deeper && echo hi", "sub", nil, nil, []string{"sub", "sub/deeper"}},
		{"cd /tmp; echo hi", "", nil, nil, []string{".", "/tmp"}},
		{`cd "$D"; echo hi`, "", nil, nil, []string{".", unknownDir}},
		{"cd ..; echo hi", "sub", nil, nil, []string{"sub", "."}},
	} {
		got := tool.MatchCommands(commandArgs(tc.command, tc.workDir), sel)
		// A cd to a directory only known at run time cannot be judged:
		// it is approved as written, besides.
		got.Commands = slices.DeleteFunc(got.Commands, func(c string) bool { return c == `cd "$D"` })
		if !slices.Equal(got.Commands, []string{"echo hi"}) || !slices.Equal(got.Redirects, tc.redirects) ||
			!slices.Equal(got.Assignments, tc.assignments) || !slices.Equal(got.WorkDirs, tc.dirs) {
			t.Errorf("%q in %q: %+v, want redirects %q, assignments %q, dirs %q", tc.command, tc.workDir, got, tc.redirects, tc.assignments, tc.dirs)
		}
	}
}

// With interpreters on, the commands that run code the policy cannot read
// need a person when the agent has approvals configured, whatever the
// patterns select.
func TestApprovalRequiredForInterpreters(t *testing.T) {
	off := newTool(t, `{"sandbox":"off"}`)
	on := newTool(t, `{"sandbox":"off","interpreters":"on"}`)
	none := tools.CommandSelection{}
	args := commandArgs("ls && python3 -c 'print(1)' > out", "")
	if got := off.MatchCommands(args, none); got.Commands != nil {
		t.Fatalf("interpreters off (refused anyway): %q", got.Commands)
	}
	got := on.MatchCommands(args, none)
	if !slices.Equal(got.Commands, []string{"python3 -c print(1)"}) || !slices.Equal(got.Redirects, []string{"> out"}) {
		t.Fatalf("interpreters on: %+v", got)
	}
	if got := on.MatchCommands(commandArgs("ls -la", ""), none); got.Commands != nil {
		t.Fatalf("no interpreter: %q", got.Commands)
	}
}
