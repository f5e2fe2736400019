package bash

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shells, source and interpreters run programs the policy may not be able
// to see. A shell's program is parsed and checked whenever the policy can
// know it: sh -c 'literal', a literal here-document. When the program comes
// from somewhere the policy cannot read before it runs (a pipe, a process
// substitution, a descriptor), the command is refused.

var shellSpec = optSpec{
	shortArg:  "oO",
	shortFlag: "abcefhiklmnprstuvxBCDEHPTV",
	longArg:   []string{"rcfile", "init-file"},
	longFlag: []string{"norc", "noprofile", "posix", "login", "restricted", "verbose", "version", "help", "debugger",
		"noediting", "dump-strings", "dump-po-strings", "pretty-print", "wordexp", "protected"},
	plus: true,
}

func launchShell(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, shellSpec)
	if !ok {
		return
	}
	dialects, _ := dialectsForShell(c.base)
	if rc, ok := o.value("rcfile", "init-file"); ok {
		// An interactive bash runs this file first: it is a program too.
		a.programFile(c, rc)
		if c.programFromStdin {
			a.s.add(ruleUnverifiable, c.display(), "the start-up file it names cannot be checked before it runs")
			c.programFromStdin = false
		}
	}
	if o.has("c") {
		if len(rest) == 0 {
			c.runsNothing = true
			return
		}
		if !rest[0].exact() {
			a.s.add(ruleLauncher, c.display(), fmt.Sprintf("the script given to %s -c must be a literal string to be checked; %s is not (put it in single quotes and let the script expand its own variables)", c.base, rest[0].src))
			return
		}
		a.launchScript(c, rest[0].text, dialects, a.stdinOf(c), depth)
		return
	}
	if len(rest) > 0 && !o.has("s") {
		a.programFile(c, rest[0])
	} else {
		c.programFromStdin = true
	}
	if c.programFromStdin {
		a.readProgramFromStdin(c, dialects, depth)
	}
}

// launchSource handles source and ., which run a file in the current shell.
func launchSource(a *analysis, c *command, depth int) {
	if len(c.args) == 0 {
		return
	}
	a.programFile(c, c.args[0])
	if c.programFromStdin {
		a.readProgramFromStdin(c, []dialect{a.dialect}, depth)
	}
}

// programFile looks at the operand naming the file a shell or source runs.
func (a *analysis) programFile(c *command, w word) {
	if w.node != nil && containsSubstitution(w.node) {
		a.s.add(ruleUnverifiable, c.display(), fmt.Sprintf("%s runs the output of a command (%s) as its program, which cannot be checked before it runs", c.base, w.src))
		return
	}
	switch {
	case !w.exact():
		// It could name /dev/stdin; treat it as reading standard input.
		c.programFromStdin = true
	case stdinPaths[w.text]:
		c.programFromStdin = true
	case namesDescriptor(w.text):
		a.s.add(ruleUnverifiable, c.display(), fmt.Sprintf("%s reads its program from the file descriptor %s, which cannot be checked before it runs", c.base, w.src))
	default:
		c.programFile = w.text
	}
}

// readProgramFromStdin checks the program a shell reads from its standard
// input.
func (a *analysis) readProgramFromStdin(c *command, dialects []dialect, depth int) {
	st := a.stdinOf(c)
	switch st.kind {
	case stdinText:
		a.launchScript(c, st.text, dialects, stdinSource{kind: stdinUnknown, desc: "the rest of its own program"}, depth)
	case stdinFile:
		if st.text != "" {
			c.programFile = st.text
		}
	case stdinPipe, stdinUnknown:
		a.s.add(ruleUnverifiable, c.display(), fmt.Sprintf("%s reads the program it runs from %s, which cannot be checked before it runs; pass it with -c '...' instead", c.base, st.desc))
	}
}

func containsSubstitution(n syntax.Node) bool {
	found := false
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}

// interpSyntax is the little the policy knows about an interpreter's
// options: which introduce code, which name a module, which take a value.
type interpSyntax struct {
	code      string   // short options followed by code: python -c, perl -e
	codeLong  []string // long options followed by code: node --eval; for pwsh, its -Command style names
	module    string   // short options naming a module to run instead: python -m
	value     string   // short options taking a value
	valueLong []string
}

var interpSyntaxes = []struct {
	glob string
	syn  interpSyntax
}{
	{"python*", interpSyntax{code: "c", module: "m", value: "WXQ"}},
	{"pypy*", interpSyntax{code: "c", module: "m", value: "WXQ"}},
	{"perl*", interpSyntax{code: "eE"}},
	{"ruby*", interpSyntax{code: "e", value: "ICEFr"}},
	{"node", interpSyntax{code: "ep", codeLong: []string{"eval", "print"}, value: "r", valueLong: []string{"require", "import", "loader", "input-type"}}},
	{"nodejs", interpSyntax{code: "ep", codeLong: []string{"eval", "print"}, value: "r", valueLong: []string{"require", "import", "loader", "input-type"}}},
	{"bun", interpSyntax{code: "ep", codeLong: []string{"eval", "print"}}},
	{"php*", interpSyntax{code: "rBRE", value: "cdz"}},
	{"lua*", interpSyntax{code: "e", value: "l"}},
	{"rscript", interpSyntax{code: "e"}},
	{"osascript", interpSyntax{code: "e"}},
	{"expect", interpSyntax{code: "c"}},
	{"pwsh", interpSyntax{codeLong: []string{"c", "command", "e", "ec", "encodedcommand"}}},
	{"powershell", interpSyntax{codeLong: []string{"c", "command", "e", "ec", "encodedcommand"}}},
}

// interpInfo is what inspectInterpreter found.
type interpInfo struct {
	// codes are the code strings given on the command line.
	codes []word
	// operand is the script file, if one is named.
	operand *word
	// fromStdin is true when the program comes from standard input.
	fromStdin bool
}

func inspectInterpreter(c *command) interpInfo {
	var syn interpSyntax
	for _, s := range interpSyntaxes {
		if ok, _ := path.Match(s.glob, c.base); ok {
			syn = s.syn
			break
		}
	}
	var info interpInfo
	module := false
	args := c.args
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.exact() {
			if !w.flagSafe {
				// It could be a code option: treat what follows as code.
				info.codes = append(info.codes, args[i+1:]...)
			}
			info.operand = &args[i]
			break
		}
		t := w.text
		if t == "-" || t == "--" || !strings.HasPrefix(t, "-") {
			if t == "--" && i+1 < len(args) {
				i++
			}
			info.operand = &args[i]
			break
		}
		name, value, hasEq := strings.Cut(strings.TrimLeft(t, "-"), "=")
		if strings.HasPrefix(t, "--") || len(syn.codeLong) > 0 && syn.code == "" {
			switch {
			case containsFold(syn.codeLong, name) && hasEq:
				info.codes = append(info.codes, literalWord(value))
			case containsFold(syn.codeLong, name) && i+1 < len(args):
				i++
				info.codes = append(info.codes, args[i])
			case containsFold(syn.valueLong, name) && !hasEq:
				i++
			}
			continue
		}
		for j := 1; j < len(t); j++ {
			ch := t[j : j+1]
			switch {
			case strings.Contains(syn.code, ch):
				if j+1 < len(t) {
					info.codes = append(info.codes, literalWord(t[j+1:]))
				} else if i+1 < len(args) {
					i++
					info.codes = append(info.codes, args[i])
				}
			case strings.Contains(syn.module, ch):
				module = true
			case strings.Contains(syn.value, ch):
				if j+1 == len(t) {
					i++
				}
			default:
				continue
			}
			break
		}
		if module {
			break
		}
	}
	info.fromStdin = len(info.codes) == 0 && !module &&
		(info.operand == nil || info.operand.exact() && stdinPaths[info.operand.text])
	return info
}

func containsFold(list []string, s string) bool {
	for _, l := range list {
		if strings.EqualFold(l, s) {
			return true
		}
	}
	return false
}
