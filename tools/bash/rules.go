package bash

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// checkCommand applies to one command every rule that looks at a single
// command: the allow list, deny patterns, denyArgs, the per-command checks of
// the deny groups, and the core rules.
func (a *analysis) checkCommand(c *command) {
	p := a.s.p
	if p.mode == modeAllow {
		switch {
		case strings.Contains(c.name.text, "/"):
			a.s.add(ruleAllow, c.display(), "in allow mode commands are run by name, not by path: a path could name a program the model wrote")
		// Exact case: on Linux LS is not ls, and could be a file someone
		// put on PATH.
		case !p.allow[c.name.text] && !a.isFunctionCall(c):
			a.s.add(ruleAllow, c.display(), fmt.Sprintf("%s is not in the allow list (%s)", c.base, p.allowList))
		}
	}
	a.matchPatterns(c, p.deny, ruleDeny, "")
	a.checkEmbedded(c, p.deny, ruleDeny, "")
	if len(p.denyArgs) > 0 {
		for _, w := range append(c.args[:len(c.args):len(c.args)], c.pathArgs...) {
			a.s.pathUses = append(a.s.pathUses, pathUse{subject: c.display(), w: w})
		}
	}
	if len(p.serverPaths) > 0 {
		a.s.serverUses = append(a.s.serverUses, serverPathUses(c)...)
	}
	for _, g := range p.groups {
		a.matchPatterns(c, g.patterns, g.name, g.why)
		a.checkEmbedded(c, g.patterns, g.name, g.why)
	}
	a.checkGroupRules(c)
	a.checkShellState(c)
	a.checkOpaqueRunner(c)
	a.checkInterpreters(c)
}

// matchPatterns reports the first pattern that matches c or, failing
// that, the first one an unknown argument could make match: one reason per
// rule is enough for the model to act on.
func (a *analysis) matchPatterns(c *command, pats []pattern, rule, why string) {
	suffix := whySuffix(why)
	var firstUnverifiable *word
	for _, pat := range pats {
		matched, unv := pat.match(c)
		if matched {
			a.s.add(rule, c.display(), patternMatched(rule)+suffix)
			return
		}
		if unv != nil && firstUnverifiable == nil {
			firstUnverifiable = unv
		}
	}
	if firstUnverifiable != nil {
		hint := ""
		if firstUnverifiable.literal && firstUnverifiable.glob {
			hint = "; write ./* rather than * so that a file name cannot become an option"
		}
		a.s.add(rule, c.display(), fmt.Sprintf("argument %s is not a literal word, so a denied pattern of %s cannot be ruled out%s%s",
			firstUnverifiable.src, ruleDescription(rule), suffix, hint))
	}
}

// whySuffix renders a group's reason after a message.
func whySuffix(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

// embeddingExempt are programs whose arguments name commands they do not
// run (git rm -rf is git's own rm).
var embeddingExempt = setOf("git", "hg", "svn", "man", "info", "help", "which", "type", "whatis", "apropos")

// checkEmbedded looks for a deny pattern's command among the arguments of a
// program the policy does not unwrap: strace -f rm -rf /, parallel rm :::
// -rf /. Only patterns with flags or operands take part, so that naming a
// command (man shred, grep sudo) is not refused.
func (a *analysis) checkEmbedded(c *command, pats []pattern, rule, why string) {
	if _, isLauncher := launchers[c.base]; isLauncher || isInterpreter(c.base) || embeddingExempt[c.base] {
		return
	}
	for i, w := range c.args {
		if !w.exact() {
			continue
		}
		inner := &command{name: w, base: strings.ToLower(path.Base(w.text)), args: c.args[i+1:]}
		for _, pat := range pats {
			if len(pat.flags)+len(pat.operands) == 0 {
				continue
			}
			if matched, _ := pat.match(inner); matched {
				a.s.add(rule, c.display(), fmt.Sprintf("its arguments hold the command %s, which %s and which %s may run%s", inner.display(), patternMatched(rule), c.base, whySuffix(why)))
				return
			}
		}
	}
}

// patternMatched says that a command matched a pattern of rule, without
// quoting the pattern: a refusal that quotes it tells an attacker exactly
// which spelling to avoid.
func patternMatched(rule string) string {
	return "matches a denied pattern of " + ruleDescription(rule)
}

func ruleDescription(rule string) string {
	if rule == ruleDeny {
		return "the tool's deny list"
	}
	return "the " + rule + " group"
}

// checkAssignedName refuses setting variables that make the shell or the
// dynamic loader run code the policy never sees.
func (a *analysis) checkAssignedName(name, subject string) {
	if name == "CDPATH" {
		a.s.cdpathSet = true
	}
	if name == "BASH_CMDS" || name == "BASH_ALIASES" {
		a.s.add(ruleShellState, subject, name+" makes a command name run another program, after the policy has checked the name")
	}
	if why, bad := forbiddenEnvName(name); bad {
		a.s.add(ruleEnvInjection, subject, fmt.Sprintf("setting %s is refused: %s", name, why))
	}
	if why, bad := execEnvName(name); bad && a.s.p.interpreters != interpretersOn {
		a.s.add(ruleInterpreters, subject, fmt.Sprintf("setting %s is refused: %s", name, why)+interpretersHint)
	}
	if name == "PATH" && a.s.p.mode == modeAllow {
		a.s.add(ruleEnvInjection, subject, "in allow mode PATH may not be changed: it decides which program a command name runs")
	}
}

var declCommands = setOf("export", "declare", "typeset", "local", "readonly", "nameref")

// checkShellState holds the core rules about builtins that change how later
// commands are found or run.
func (a *analysis) checkShellState(c *command) {
	switch {
	case c.base == "alias" && anyArg(c.args, func(w word) bool { return !w.literal || strings.Contains(w.text, "=") }):
		a.s.add(ruleShellState, c.display(), "an alias changes which program a later command name runs, after the policy has checked the name")
	case c.base == "hash" && flagsOf("hash", c.args, nil)["-p"]:
		a.s.add(ruleShellState, c.display(), "hash -p makes a command name run another program")
	case c.base == "enable":
		a.s.add(ruleShellState, c.display(), "enable loads builtins from shared libraries or hides builtins")
	case declCommands[c.base]:
		for _, w := range c.args {
			if w.exact() && (strings.HasPrefix(w.text, "-") || strings.HasPrefix(w.text, "+")) {
				continue
			}
			name, _, known := assignmentName(w)
			if !known {
				a.s.add(ruleEnvInjection, c.display(), fmt.Sprintf("%s computes the name of the variable it sets at run time, so it could set LD_PRELOAD or BASH_ENV", w.src))
				continue
			}
			a.checkAssignedName(name, c.display())
		}
	}
}

func anyArg(args []word, f func(word) bool) bool {
	for _, w := range args {
		if f(w) {
			return true
		}
	}
	return false
}

// socketCode matches interpreter code that opens network connections, the
// core of a reverse shell in python, perl, ruby, node, php or awk.
var socketCode = regexp.MustCompile(`(?i)socket|fsockopen|/inet/|net\.connect|createconnection|tcpclient|pty\.spawn|/dev/tcp/|/dev/udp/|io\.popen|require\(\s*['"](node:)?(net|dgram|tls)['"]`)

var awkNames = setOf("awk", "gawk", "mawk", "nawk")

// checkGroupRules holds the per-command checks of the deny groups that a
// pattern cannot express.
func (a *analysis) checkGroupRules(c *command) {
	p := a.s.p
	if p.enabled(groupEnvRead) {
		if why := readsEnvironment(c); why != "" {
			a.s.add(groupEnvRead, c.display(), why+" ("+groupWhy(groupEnvRead)+")")
		}
		for _, w := range c.args {
			if namesEnviron(w) {
				a.s.add(groupEnvRead, c.display(), fmt.Sprintf("%s names a process environment file (%s)", w.src, groupWhy(groupEnvRead)))
			}
		}
	}
	if p.enabled(groupDestructive) && c.base == "rm" && len(c.via) > 0 {
		last := c.via[len(c.via)-1]
		if last == "xargs" || strings.HasPrefix(last, "find ") {
			a.s.add(groupDestructive, c.display(), "rm on file names that find or xargs supply at run time deletes files nobody has seen ("+groupWhy(groupDestructive)+")")
		}
	}
	if p.enabled(groupDestructive) && c.base == "kill" && killsEverything(c.args) {
		a.s.add(groupDestructive, c.display(), "kill -1 signals every process the user may signal, and kill 1 signals init ("+groupWhy(groupDestructive)+")")
	}
	if p.enabled(groupPower) && anyArg(c.args, func(w word) bool { return w.exact() && namesSysrq(w.text) }) {
		a.s.add(groupPower, c.display(), "writing to /proc/sysrq-trigger can reboot or crash the machine ("+groupWhy(groupPower)+")")
	}
	if p.enabled(groupDetach) && enablesJobControl(c) {
		a.s.add(groupDetach, c.display(), "job control (-m, -o monitor) puts each background job in its own process group, beyond the reach of the timeout ("+groupWhy(groupDetach)+")")
	}
	if p.enabled(groupDisk) {
		for _, w := range c.args {
			if w.exact() && namesRawDisk(w.text) {
				a.s.add(groupDisk, c.display(), fmt.Sprintf("%s is a raw disk device (%s)", w.src, groupWhy(groupDisk)))
			}
		}
	}
	if p.enabled(groupReverseShell) {
		if isInterpreter(c.base) {
			for _, code := range inspectInterpreter(c).codes {
				switch {
				case !code.exact():
					a.s.add(groupReverseShell, c.display(), fmt.Sprintf("the code %s is not a literal string, so it cannot be checked for network connections", code.src))
				case socketCode.MatchString(code.text):
					a.s.add(groupReverseShell, c.display(), "the code opens a network connection or a terminal ("+groupWhy(groupReverseShell)+")")
				}
			}
		}
		if awkNames[c.base] && anyArg(c.args, func(w word) bool { return strings.Contains(w.text, "/inet/") }) {
			a.s.add(groupReverseShell, c.display(), "awk's /inet/ files are network connections ("+groupWhy(groupReverseShell)+")")
		}
	}
}

// readsEnvironment explains why c prints the environment, or returns "".
func readsEnvironment(c *command) string {
	operands := func() int {
		n := 0
		for _, w := range c.args {
			if !(w.exact() && (strings.HasPrefix(w.text, "-") || strings.HasPrefix(w.text, "+"))) {
				n++
			}
		}
		return n
	}
	switch {
	case c.base == "env" && c.runsNothing:
		return "env without a command prints the environment"
	case c.base == "set" && len(c.args) == 0:
		return "set without arguments prints every variable"
	case declCommands[c.base] && operands() == 0:
		return c.base + " without names prints variables"
	case c.base == "compgen":
		f := flagsOf("compgen", c.args, nil)
		v, _ := optionValue(c.args, "A")
		if f["-e"] || f["-v"] || v.text == "export" || v.text == "variable" || !v.literal && v.src != "" {
			return "compgen -e/-v lists variables"
		}
	case c.base == "ps":
		for i, w := range c.args {
			// BSD-style ps options have no dash; e adds each process's
			// environment, which includes the agent's own.
			if w.exact() && isLetters(w.text) && strings.Contains(w.text, "e") && !takesValue(c.args, i) {
				return "ps " + w.text + " shows the environment of processes"
			}
		}
	}
	return ""
}

func isLetters(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) < 0
}

// takesValue reports whether args[i] is the value of the option before it
// (ps -o pid,user, ps -u root).
func takesValue(args []word, i int) bool {
	if i == 0 || !args[i-1].exact() {
		return false
	}
	prev := args[i-1].text
	if strings.HasPrefix(prev, "--") {
		return !strings.Contains(prev, "=")
	}
	return strings.HasPrefix(prev, "-") && len(prev) > 1 && strings.ContainsRune("oOpPuUgGCtsNkq", rune(prev[len(prev)-1]))
}

// optionValue returns the value of the first -X option among args
// (-Xvalue or -X value).
func optionValue(args []word, letter string) (word, bool) {
	for i, w := range args {
		if !w.exact() || !strings.HasPrefix(w.text, "-"+letter) {
			continue
		}
		if len(w.text) > 2 {
			return literalWord(w.text[2:]), true
		}
		if i+1 < len(args) {
			return args[i+1], true
		}
	}
	return word{}, false
}

// namesEnviron reports whether w names (or, with expansions, may name) a
// /proc/<pid>/environ file. Any process of the same user can read the
// agent's own environment there, API keys included.
func namesEnviron(w word) bool {
	t := w.text
	switch {
	case w.exact():
		return path.Base(path.Clean(t)) == "environ"
	case w.literal:
		ok, _ := path.Match(path.Base(t), "environ")
		return ok || strings.Contains(t, "environ")
	default:
		return strings.Contains(t, "environ") || strings.Contains(t, "/proc") && strings.Contains(t, "env")
	}
}

func namesSysrq(v string) bool {
	if _, after, ok := strings.Cut(v, "="); ok {
		v = after
	}
	return path.Clean(v) == "/proc/sysrq-trigger"
}

// killsEverything reports whether kill's operands include -1 (every
// process) or 1 (init). The first -SIGNAL or -N is the signal, not a pid.
func killsEverything(args []word) bool {
	signalSeen := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.exact() {
			continue
		}
		switch {
		case w.text == "--":
			signalSeen = true
		case w.text == "-l" || w.text == "-L":
			return false
		case w.text == "-s" || w.text == "-n":
			i++
			signalSeen = true
		case w.text == "1" || w.text == "-1" && signalSeen:
			return true
		case strings.HasPrefix(w.text, "-") && !signalSeen:
			signalSeen = true
		}
	}
	return false
}

// enablesJobControl reports whether c turns on job control: set -m, set -o
// monitor, or a shell started with them.
func enablesJobControl(c *command) bool {
	if c.base != "set" && !isShell(c.base) {
		return false
	}
	for i, w := range c.args {
		isOption := w.exact() && len(w.text) > 1 && (w.text[0] == '-' || w.text[0] == '+') && !strings.HasPrefix(w.text, "--")
		if !isOption {
			if isShell(c.base) {
				return false // a shell's options end at its first operand
			}
			continue
		}
		if w.text[0] == '-' && strings.Contains(w.text, "m") {
			return true
		}
		if w.text[0] == '-' && strings.HasSuffix(w.text, "o") && i+1 < len(c.args) && c.args[i+1].text == "monitor" {
			return true
		}
	}
	return false
}
