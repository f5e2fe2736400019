package bash

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ruleagent/ruleagent/tools"
)

var _ tools.CommandMatcher = (*Tool)(nil)

// unknownDir stands in the approved directories for a cd whose target is
// only known at run time (cd "$X").
const unknownDir = "(a directory known only at run time)"

// MatchCommands implements tools.CommandMatcher for approvals: it parses
// the call's command as the policy does, in the call's work_dir, and
// returns what approving the call covers: each command it would run
// (launched ones included: `xargs git push` runs git) in canonical form,
// its words after quote removal joined by single spaces, that the
// selection selects; with interpreters on, also each command that runs
// code the policy cannot read; and, whatever the selection, every
// redirect and variable assignment of the call and the directories it
// runs in, since each of them changes what an approved command does.
//
// A pattern is a program name (a glob such as kubectl*) followed by words
// that must all appear among the command's arguments, in any order: "git
// push" selects `git push origin`, `/usr/bin/git push` and `git -c x=y
// push`, so options cannot slip a command past its pattern. A command
// whose program or arguments are not literal (`$CMD push`) cannot be
// judged and is always selected, as written.
func (t *Tool) MatchCommands(raw json.RawMessage, sel tools.CommandSelection) tools.ShellCall {
	var a callArgs
	if tools.DecodeArgs(raw, &a) != nil || strings.TrimSpace(a.Command) == "" {
		return tools.ShellCall{}
	}
	dir, rel := t.approvalDir(a.WorkDir)
	s := &session{p: t.policy, seen: map[string]bool{}, unset: map[string]bool{}, workDir: dir}
	files, ok, err := s.parseAll(a.Command, t.policy.dialects)
	if err != nil && len(files) == 0 {
		// Nothing to judge: the person approves the text as written.
		return tools.ShellCall{Commands: []string{a.Command}, WorkDirs: []string{rel}}
	}
	for i, f := range files {
		s.analyze(f, ok[i], t.policy.topBashLike, 0, nil, stdinSource{kind: stdinEmpty})
	}
	interp := t.interpreterSubjects(a.Command, dir)
	var call tools.ShellCall
	for _, c := range s.commands {
		canon, literal := canonical(c)
		if !literal || sel.All || interp[c.display()] || slices.ContainsFunc(sel.Patterns, func(p string) bool { return selects(p, c) }) {
			call.Commands = appendNew(call.Commands, canon)
		}
		delete(interp, c.display())
	}
	// Subjects that name no command (a setting such as PYTHONSTARTUP=...)
	// are approved as the policy wrote them.
	for subject := range interp {
		call.Commands = appendNew(call.Commands, subject)
	}
	call.Redirects, call.Assignments = s.redirectsAndAssignments()
	call.WorkDirs = t.approvalDirs(s, dir, rel)
	return call
}

// approvalDir resolves the work_dir argument as the call will (dir, to
// parse in) and names it relative to the workspace ("." for itself). A
// work_dir that does not resolve is named as given: the call then fails.
func (t *Tool) approvalDir(p string) (dir, rel string) {
	if p == "" {
		return t.ws.Dir(), "."
	}
	r, err := t.ws.Resolve(p)
	if err != nil {
		return t.ws.Dir(), p
	}
	return t.ws.Abs(r), path.Clean("./" + r)
}

// approvalDirs lists the call's work_dir, then the other directories its
// commands may run in (cd, pushd, env -C, each taken from the work_dir),
// workspace-relative where they lie inside it.
func (t *Tool) approvalDirs(s *session, dir, rel string) []string {
	out := []string{rel}
	home := os.Getenv("HOME")
	targets, known := s.cdTargets(home)
	for _, target := range targets {
		d := resolvePath(dir, target, home)
		if r, err := filepath.Rel(t.ws.Dir(), d); err == nil && r != ".." && !strings.HasPrefix(r, "../") {
			d = filepath.ToSlash(r)
		}
		out = appendNew(out, d)
	}
	if !known || s.cdpathSet {
		out = append(out, unknownDir)
	}
	return out
}

// redirectsAndAssignments lists every redirect and variable assignment of
// the scripts the session parsed (nested ones included), as written, each
// once, in order.
func (s *session) redirectsAndAssignments() (redirects, assignments []string) {
	for _, a := range s.analyses {
		syntax.Walk(a.file, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Redirect:
				redirects = appendNew(redirects, redirectText(n))
			case *syntax.Assign:
				assignments = appendNew(assignments, printNode(n))
			}
			return true
		})
	}
	return redirects, assignments
}

// redirectText is a redirect as written: `> out.txt`, `2>&1`, `<<EOF`.
func redirectText(r *syntax.Redirect) string {
	s := ""
	if r.N != nil {
		s = r.N.Value
	}
	s += r.Op.String()
	if r.Op != syntax.DplIn && r.Op != syntax.DplOut {
		s += " "
	}
	return s + printNode(r.Word)
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
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

// interpreterSubjects are, with interpreters on, the commands (by their
// display form) that run code the policy cannot read (python3 -c, make,
// git -c alias...): they need a person whenever the agent has approvals
// configured.
func (t *Tool) interpreterSubjects(command, dir string) map[string]bool {
	out := map[string]bool{}
	if t.policy.interpreters != interpretersOn {
		return out
	}
	strict := *t.policy
	strict.interpreters = interpretersOff
	var r *Refusal
	if !errors.As(strict.CheckIn(command, dir), &r) {
		return out
	}
	for _, f := range r.Findings {
		if f.Rule == ruleInterpreters {
			out[f.Subject] = true
		}
	}
	return out
}
