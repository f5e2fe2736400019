package bash

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// maxCommandBytes bounds the command string the model may send.
const maxCommandBytes = 64 << 10

// maxListedFindings bounds how many reasons a refusal lists.
const maxListedFindings = 8

// Policy decides whether a command string may run. It is built once from a
// validated config and is safe for concurrent use.
//
// It parses the command with a real shell parser, in every dialect the
// configured shell may speak, and checks every command the script would
// run: in pipelines, lists, subshells, functions, loops, command and process
// substitutions, here-documents, redirect targets and assignment values, and
// inside launchers (env, xargs, find -exec, sh -c, eval, ...). It is a deny
// list and an allow list over what can be known before the script runs, not
// a sandbox: a program it allows can still do anything its user can.
type Policy struct {
	mode      string
	allow     map[string]bool
	allowList string
	deny      []pattern
	denyArgs  []string
	groups    []denyGroup
	// workspace is the workspace directory, and workspaceReal the same
	// with symlinks resolved; recursive changes must stay inside it.
	workspace, workspaceReal string
	// interpreters is the interpreters setting (interpreters.go).
	interpreters string
	groupOn      map[string]bool
	dialects     []dialect
	// topBashLike: the configured shell may be bash, ksh or zsh.
	topBashLike bool
	// shMayBeBash: a script handed to "sh" may be run by bash.
	shMayBeBash bool
	// serverPaths are the server's own paths, with their symlink-resolved
	// names (serverpaths.go).
	serverPaths []tools.ServerPath
}

// setWorkspace tells the policy where the workspace is.
func (p *Policy) setWorkspace(dir string) {
	p.workspace = filepath.Clean(dir)
	p.workspaceReal = realPath(p.workspace)
}

func newPolicy(s *settings) *Policy {
	p := &Policy{
		mode:     s.Mode,
		allow:    map[string]bool{},
		denyArgs: slices.Clone(s.DenyArgs),
		groupOn:  map[string]bool{},
		dialects: s.shellDialects,

		interpreters: s.Interpreters,
	}
	p.shMayBeBash = shMayBeBash()
	for _, name := range shellAliases(s.ShellPath) {
		p.topBashLike = p.topBashLike || bashLikeShell(name, p.shMayBeBash)
	}
	for _, name := range s.Allow {
		p.allow[name] = true
	}
	p.allowList = strings.Join(s.Allow, ", ")
	for _, d := range s.Deny {
		pat, _ := parsePattern(d) // validated by Config.validate
		p.deny = append(p.deny, pat)
	}
	for _, g := range denyGroups {
		if !slices.Contains(s.AllowGroups, g.name) {
			p.groups = append(p.groups, g)
			p.groupOn[g.name] = true
		}
	}
	return p
}

// enabled reports whether a default deny group is on.
func (p *Policy) enabled(group string) bool { return p.groupOn[group] }

// Check returns nil when command may run. Otherwise it returns a
// *tools.Error of kind tools.ErrPolicyDenied that names each offending
// command and the rule it breaks, or of kind tools.ErrInvalidArgs when the
// command is empty, too long or cannot be parsed.
func (p *Policy) Check(command string) error { return p.CheckIn(command, p.workspace) }

// CheckIn is Check for a command that starts in workDir.
func (p *Policy) CheckIn(command, workDir string) error {
	switch {
	case strings.TrimSpace(command) == "":
		return tools.Errorf(tools.ErrInvalidArgs, "command is empty")
	case len(command) > maxCommandBytes:
		return tools.Errorf(tools.ErrInvalidArgs, "command is %d bytes, over the limit of %d", len(command), maxCommandBytes)
	case strings.ContainsRune(command, 0):
		return tools.Errorf(tools.ErrInvalidArgs, "command contains a NUL byte")
	}
	s := &session{p: p, seen: map[string]bool{}, unset: map[string]bool{}, workDir: workDir}
	files, ok, parseErr := s.parseAll(command, p.dialects)
	for i, f := range files {
		s.analyze(f, ok[i], p.topBashLike, 0, nil, stdinSource{kind: stdinEmpty})
	}
	s.checkFilePrograms()
	s.structural()
	s.checkPaths()
	if len(s.findings) > 0 {
		return refusal(s.findings)
	}
	if parseErr != nil {
		return tools.Errorf(tools.ErrInvalidArgs, "the command cannot be parsed %v; nothing was run", parseErr)
	}
	return nil
}

func refusal(fs []finding) error {
	var b strings.Builder
	b.WriteString("the bash tool's policy refused the command; nothing was run")
	for i, f := range fs {
		if i == maxListedFindings {
			fmt.Fprintf(&b, "\n- and %d more", len(fs)-i)
			break
		}
		fmt.Fprintf(&b, "\n- %s", f)
	}
	r := &Refusal{err: tools.Errorf(tools.ErrPolicyDenied, "%s", b.String())}
	for _, f := range fs {
		r.Findings = append(r.Findings, Finding{Rule: f.rule, Subject: f.subject, Why: f.why})
		r.serverPath = r.serverPath || f.rule == RuleServerPaths

	}
	return r
}

// Finding is one reason the policy refused a command.
type Finding struct {
	// Rule names the rule: a deny group, "deny", "denyArgs", "allow",
	// "interpreters", or a core rule.
	Rule    string
	Subject string
	Why     string
}

// Refusal is the error of a refused command. It is a tools.ErrPolicyDenied
// error (errors.Is and errors.As with *tools.Error see it) that also lists
// every finding, so that a caller can tell a refusal an approval could
// lift (OnlyRules("interpreters")) from one it must not.
type Refusal struct {
	Findings []Finding
	err      *tools.Error
	// serverPath: a finding is of RuleServerPaths, so the refusal is
	// tools.ErrServerPath too.
	serverPath bool
}

func (r *Refusal) Error() string { return r.err.Error() }

// Unwrap lets errors.Is and errors.As see the *tools.Error, and
// tools.ErrServerPath when a server path was named.
func (r *Refusal) Unwrap() []error {
	if r.serverPath {
		return []error{r.err, tools.ErrServerPath}
	}
	return []error{r.err}
}

// OnlyRules reports whether every finding is of one of the named rules.
func (r *Refusal) OnlyRules(rules ...string) bool {
	for _, f := range r.Findings {
		if !slices.Contains(rules, f.Rule) {
			return false
		}
	}
	return len(r.Findings) > 0
}

// RuleInterpreters is the rule of commands refused because they run code
// in a language the policy does not read (the interpreters setting).
const RuleInterpreters = ruleInterpreters
