package bash

import (
	"encoding/json"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

var _ tools.CommandMatcher = (*Tool)(nil)

// MatchCommands implements tools.CommandMatcher for approvals: it parses
// command as the policy does and returns each command it would run
// (launched ones included: `xargs git push` runs git) in canonical form,
// its words after quote removal joined by single spaces, that one of
// patterns selects; every command when patterns is nil.
//
// A pattern is a program name (a glob such as kubectl*) followed by words
// that must all appear among the command's arguments, in any order: "git
// push" selects `git push origin`, `/usr/bin/git push` and `git -c x=y
// push`, so options cannot slip a command past its pattern. A command
// whose program or arguments are not literal (`$CMD push`) cannot be
// judged and is always selected, as written.
//
// The canonical form is what an approval covers: approving `git status`
// approves exactly that command, never `git -c core.pager=... log`.
func (t *Tool) MatchCommands(command string, patterns []string) []string {
	s := &session{p: t.policy, seen: map[string]bool{}, unset: map[string]bool{}, workDir: t.policy.workspace}
	files, ok, err := s.parseAll(command, t.policy.dialects)
	if err != nil && len(files) == 0 {
		return []string{command}
	}
	for i, f := range files {
		s.analyze(f, ok[i], t.policy.topBashLike, 0, nil, stdinSource{kind: stdinEmpty})
	}
	var out []string
	for _, c := range s.commands {
		canon, literal := canonical(c)
		if !literal || patterns == nil || slices.ContainsFunc(patterns, func(p string) bool { return selects(p, c) }) {
			if !slices.Contains(out, canon) {
				out = append(out, canon)
			}
		}
	}
	return out
}

// canonical is a command's words joined by spaces (a word that is not
// literal as written, one that only exists at run time as …), and whether
// every word is literal.
func canonical(c *command) (string, bool) {
	words := make([]string, 0, len(c.args)+1)
	literal := true
	for _, w := range append([]word{c.name}, c.args...) {
		literal = literal && w.literal
		switch {
		case w.literal:
			words = append(words, w.text)
		case w.src != "":
			words = append(words, w.src)
		default:
			words = append(words, "…")
		}
	}
	return strings.Join(words, " "), literal
}

// selects reports whether pattern selects command c.
func selects(pattern string, c *command) bool {
	fields := strings.Fields(pattern)
	if len(fields) == 0 {
		return false
	}
	if ok, _ := path.Match(strings.ToLower(fields[0]), c.base); !ok {
		return false
	}
	for _, want := range fields[1:] {
		if !slices.ContainsFunc(c.args, func(a word) bool { return a.text == want }) {
			return false
		}
	}
	return true
}

// ApprovalRequired implements tools.ApprovalRequirer: with interpreters on,
// the commands that run code the policy cannot read (python3 -c, make, git
// -c alias...) need a person whenever the agent has approvals configured.
func (t *Tool) ApprovalRequired(args json.RawMessage) []string {
	if t.policy.interpreters != interpretersOn {
		return nil
	}
	var a callArgs
	if tools.DecodeArgs(args, &a) != nil || a.Command == "" {
		return nil
	}
	strict := *t.policy
	strict.interpreters = interpretersOff
	var r *Refusal
	if !errors.As(strict.Check(a.Command), &r) {
		return nil
	}
	var out []string
	for _, f := range r.Findings {
		if f.Rule == ruleInterpreters && !slices.Contains(out, f.Subject) {
			out = append(out, f.Subject)
		}
	}
	return out
}
