package bash

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep a hostile script from making the check itself expensive.
const (
	// maxDepth bounds nesting of launchers and scripts in strings
	// (sh -c "eval 'env sh -c ...'").
	maxDepth = 8
	// maxParsedBytes bounds the source parsed for one check, nested
	// scripts and every dialect included.
	maxParsedBytes = 4 << 20
)

// finding is one reason to refuse a command.
type finding struct {
	// rule names the rule: a deny group, "deny", "denyArgs", "allow", or one
	// of the core rules that hold in both modes.
	rule string
	// subject is the command or construct that broke it, as written.
	subject string
	why     string
}

func (f finding) String() string {
	return fmt.Sprintf("rule %q: %s: %s", f.rule, f.subject, f.why)
}

// Core rules: they hold in both modes and cannot be switched off.
const (
	ruleLiteralName  = "literal_name"
	ruleLauncher     = "launcher"
	ruleUnverifiable = "unverifiable_script"
	ruleEnvInjection = "env_injection"
	ruleShellState   = "shell_state"
	ruleLimits       = "limits"
	ruleAllow        = "allow"
	ruleDeny         = "deny"
	ruleDenyArgs     = "denyArgs"
	// RuleServerPaths refuses a command that names one of the server's
	// own paths (serverpaths.go).
	RuleServerPaths = "server_paths"
)

// session is one check of one command string, with every script nested in
// it.
type session struct {
	p        *Policy
	findings []finding
	seen     map[string]bool
	analyses []*analysis
	// commands holds every command of every script, launched ones included.
	commands []*command
	parsed   int
	// unset holds the names unset commands may remove; unsetAny is set
	// when one of them has operands that are not literal.
	unset    map[string]bool
	unsetAny bool
	// workDir is the directory the command starts in.
	workDir string
	// pathUses are the words commands use as file names (paths.go).
	pathUses []pathUse
	// serverUses are the words that may name a server path (serverpaths.go).
	serverUses []pathUse
	// cdpathSet: the script assigns CDPATH, so cd may go anywhere.
	cdpathSet bool
}

func (s *session) add(rule, subject, why string) {
	f := finding{rule: rule, subject: subject, why: why}
	key := f.String()
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	s.findings = append(s.findings, f)
}

// analysis is the check of one parsed script in one dialect.
type analysis struct {
	s       *session
	file    *syntax.File
	dialect dialect
	// bashLike is set when a shell that evaluates strings in arithmetic
	// and variable names (bash, ksh, zsh) may run the script.
	bashLike bool
	depth    int
	via      []string
	// stdin is what the script's own standard input is: for the command
	// string, the tool's empty input; for sh -c 'script', the stdin of sh.
	stdin   stdinSource
	parents map[syntax.Node]syntax.Node
	// funcs records where the script certainly defines functions.
	funcs funcIndex
	// funcNames holds every function name the script defines anywhere.
	funcNames map[string]bool
	// calls maps each simple command of the script to what it runs.
	calls map[*syntax.CallExpr]*command
}

// parseAll parses src in every dialect. It returns the files that parsed,
// and the first parse error, if any.
func (s *session) parseAll(src string, dialects []dialect) ([]*syntax.File, []dialect, error) {
	s.parsed += len(src) * len(dialects)
	if s.parsed > maxParsedBytes {
		return nil, nil, fmt.Errorf("the command and the scripts nested in it are too large to check")
	}
	var files []*syntax.File
	var ok []dialect
	var firstErr error
	for _, d := range dialects {
		f, err := parse(src, d)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("as %s: %w", d.name, err)
			}
			continue
		}
		files = append(files, f)
		ok = append(ok, d)
	}
	return files, ok, firstErr
}

// analyze checks one parsed script and returns the commands it runs at its
// top level (each with the commands it launches).
func (s *session) analyze(f *syntax.File, d dialect, bashLike bool, depth int, via []string, stdin stdinSource) []*command {
	a := &analysis{
		s: s, file: f, dialect: d, bashLike: bashLike, depth: depth, via: via, stdin: stdin,
		parents:   map[syntax.Node]syntax.Node{},
		funcs:     newFuncIndex(),
		funcNames: map[string]bool{},
		calls:     map[*syntax.CallExpr]*command{},
	}
	s.analyses = append(s.analyses, a)
	a.indexTree()
	a.funcs.indexLists(f)
	s.recordUnsets(f)
	var out []*command
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if c := a.resolveStmt(n); c != nil {
				out = append(out, c)
			}
		case *syntax.Assign:
			// Declarations (export X=...) are checked with their command.
			if _, inDecl := a.parents[n].(*syntax.DeclClause); n.Name != nil && !inDecl {
				a.checkAssignedName(n.Name.Value, printNode(n))
			}
		case *syntax.Redirect:
			a.checkRedirect(n)
		}
		return true
	})
	if a.bashLike {
		a.checkEvaluatedStrings()
	}
	return out
}

// indexTree records every node's parent and where functions are defined.
func (a *analysis) indexTree() {
	var stack []syntax.Node
	syntax.Walk(a.file, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		if len(stack) > 0 {
			a.parents[n] = stack[len(stack)-1]
		}
		stack = append(stack, n)
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			a.funcNames[fd.Name.Value] = true
		}
		return true
	})
}

// resolveStmt turns a simple command or a declaration into a command and
// checks it with everything it launches.
func (a *analysis) resolveStmt(st *syntax.Stmt) *command {
	c := a.resolveStmtNoCheck(st)
	if c != nil {
		a.expand(c, a.depth)
	}
	return c
}

// resolveStmtNoCheck turns a statement into a command without checking it.
func (a *analysis) resolveStmtNoCheck(st *syntax.Stmt) *command {
	var c *command
	switch cmd := st.Cmd.(type) {
	case *syntax.CallExpr:
		if len(cmd.Args) == 0 {
			return nil
		}
		ws := wordsFromNodes(cmd.Args)
		c = newCommand(ws[0], ws[1:], st, a, a.via)
		a.calls[cmd] = c
	case *syntax.DeclClause:
		c = newCommand(literalWord(cmd.Variant.Value), declOperands(cmd), st, a, a.via)
	case *syntax.LetClause:
		c = newCommand(literalWord("let"), nil, st, a, a.via)
	default:
		return nil
	}
	return c
}

// declOperands turns the arguments of export/declare/local/... into words,
// as the program would receive them.
func declOperands(d *syntax.DeclClause) []word {
	var out []word
	for _, as := range d.Args {
		switch {
		case as.Naked && as.Name == nil && as.Value != nil:
			out = append(out, evalWord(as.Value))
		case as.Naked && as.Name != nil:
			out = append(out, literalWord(as.Name.Value))
		case as.Name != nil:
			// NAME=value as one word, the way the builtin receives it.
			parts := []syntax.WordPart{&syntax.Lit{Value: as.Name.Value + "="}}
			if as.Value != nil {
				parts = append(parts, as.Value.Parts...)
			}
			w := evalWord(&syntax.Word{Parts: parts})
			if as.Array != nil || as.Index != nil {
				w.literal = false
			}
			w.src = printNode(as)
			out = append(out, w)
		}
	}
	return out
}

// expand checks c, works out what it launches, and checks those too.
func (a *analysis) expand(c *command, depth int) {
	a.s.commands = append(a.s.commands, c)
	if c.base == "" || strings.HasPrefix(c.name.text, "=") {
		a.s.add(ruleLiteralName, c.display(), "the command name must be a literal word; a name produced by an expansion, substitution, glob or brace expansion cannot be checked before it runs")
		return
	}
	if depth > maxDepth {
		a.s.add(ruleLimits, c.display(), fmt.Sprintf("launchers and nested scripts go deeper than %d levels", maxDepth))
		return
	}
	if l, ok := launchers[c.base]; ok {
		l(a, c, depth)
	} else if isDynamicLoader(c.base) {
		launchLoader(a, c, depth)
	}
	a.checkCommand(c)
}

// launch records that c starts inner and checks inner.
func (a *analysis) launch(c, inner *command, depth int) {
	a.launchAs(c, inner, c.base, depth)
}

// launchAs is launch with the name the launcher goes by in messages
// ("find -exec").
func (a *analysis) launchAs(c, inner *command, label string, depth int) {
	inner.via = append(append([]string{}, c.via...), label)
	c.launched = append(c.launched, inner)
	a.expand(inner, depth+1)
}

// launchScript checks src, a script that c hands to a shell of the given
// dialects, with the given standard input.
func (a *analysis) launchScript(c *command, src string, dialects []dialect, stdin stdinSource, depth int) {
	if len(dialects) == 0 {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("the policy cannot parse %s scripts, so it cannot check what this one runs", c.base))
		return
	}
	via := append(append([]string{}, c.via...), c.base)
	if depth+1 > maxDepth {
		a.s.add(ruleLimits, c.display(), fmt.Sprintf("launchers and nested scripts go deeper than %d levels", maxDepth))
		return
	}
	files, ok, err := a.s.parseAll(src, dialects)
	if err != nil {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("the script it runs cannot be parsed (%v), so it cannot be checked", err))
	}
	var bashLike bool
	switch {
	case isShell(c.base):
		bashLike = bashLikeShell(c.base, a.s.p.shMayBeBash)
	case runsInCurrentShell[c.base]:
		bashLike = a.bashLike
	default: // watch, flock -c, script -c and env -S hand it to sh
		bashLike = bashLikeShell("sh", a.s.p.shMayBeBash)
	}
	for i, f := range files {
		c.launched = append(c.launched, a.s.analyze(f, ok[i], bashLike, depth+1, via, stdin)...)
	}
}

// runsInCurrentShell are the builtins whose scripts the current shell runs
// itself.
var runsInCurrentShell = setOf("eval", "trap", "source", ".", "mapfile", "readarray", "compgen")

// commandsIn returns every command run by the simple commands inside n,
// launched ones included.
func (a *analysis) commandsIn(n syntax.Node) []*command {
	var out []*command
	syntax.Walk(n, func(m syntax.Node) bool {
		if ce, ok := m.(*syntax.CallExpr); ok {
			if c := a.calls[ce]; c != nil {
				out = append(out, c.tree()...)
			}
		}
		return true
	})
	return out
}
