package bash

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A launcher is a program (or builtin) that runs another command: env,
// xargs, find -exec, nice, sh -c, eval and the like. The policy unwraps it
// and checks the launched command as if the script ran it directly; the
// launcher itself is checked too (in allow mode it must be allowed).
type launcher func(a *analysis, c *command, depth int)

// launchers is filled by the init functions of the files that define
// launchers (this one, runners.go, execopts.go).
var launchers = map[string]launcher{}

func init() {
	base := map[string]launcher{
		"env":   launchEnv,
		"xargs": launchXargs,
		"find":  launchFind,
		"nohup": prefixLauncher(optSpec{longFlag: []string{"help", "version"}}),
		"timeout": skipOperandLauncher(1, optSpec{shortArg: "sk", shortFlag: "v",
			longArg: []string{"signal", "kill-after"}, longFlag: []string{"preserve-status", "foreground", "verbose", "help", "version"}}),
		"nice":   prefixLauncher(optSpec{shortArg: "n", numeric: true, longArg: []string{"adjustment"}, longFlag: []string{"help", "version"}}),
		"ionice": launchIonice,
		"stdbuf": prefixLauncher(optSpec{shortArg: "ioe", longArg: []string{"input", "output", "error"}, longFlag: []string{"help", "version"}}),
		"setsid": prefixLauncher(optSpec{shortFlag: "cfw", longFlag: []string{"ctty", "fork", "wait", "help", "version"}}),
		"exec":   prefixLauncher(optSpec{shortArg: "a", shortFlag: "cl"}),
		"command": func(a *analysis, c *command, depth int) {
			o, rest, ok := a.options(c, optSpec{shortFlag: "pvV"})
			if ok && !o.has("v", "V") {
				a.launchArgs(c, rest, depth)
			} else if ok {
				c.runsNothing = true
			}
		},
		"builtin": prefixLauncher(optSpec{}),
		"time": prefixLauncher(optSpec{shortArg: "fo", shortFlag: "apvqV", longArg: []string{"format", "output"},
			longFlag: []string{"append", "portability", "verbose", "quiet", "help", "version"}}),
		"sudo":      launchSudo,
		"doas":      launchDoas,
		"busybox":   launchMultiCall,
		"toybox":    launchMultiCall,
		"eval":      launchEval,
		"trap":      launchTrap,
		"watch":     launchWatch,
		"flock":     launchFlock,
		"chroot":    skipOperandLauncher(1, optSpec{longArg: []string{"userspec", "groups"}, longFlag: []string{"skip-chdir", "help", "version"}}),
		"taskset":   launchTaskset,
		"unbuffer":  prefixLauncher(optSpec{shortFlag: "p"}),
		"script":    launchScriptCmd,
		"source":    launchSource,
		".":         launchSource,
		"mapfile":   launchMapfile,
		"readarray": launchMapfile,
		"compgen":   launchCompgen,
	}
	for name, l := range base {
		launchers[name] = l
	}
	for name := range shellNames {
		launchers[name] = launchShell
	}
}

// options parses c's options, recording a finding when they cannot be
// understood.
func (a *analysis) options(c *command, spec optSpec) (opts, []word, bool) {
	o, i, err := parseOpts(c.args, spec)
	if err != nil {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("cannot tell which command %s runs: %v", c.base, err))
		return nil, nil, false
	}
	return o, c.args[i:], true
}

// launchArgs launches the command named by the words rest, if any.
func (a *analysis) launchArgs(c *command, rest []word, depth int) {
	if len(rest) == 0 {
		c.runsNothing = true
		return
	}
	a.launch(c, newCommand(rest[0], rest[1:], c.stmt, c.an, nil), depth)
}

// prefixLauncher is for launchers of the form `name [options] command...`.
func prefixLauncher(spec optSpec) launcher {
	return skipOperandLauncher(0, spec)
}

// skipOperandLauncher is for `name [options] operand... command...`, such
// as timeout DURATION command.
func skipOperandLauncher(skip int, spec optSpec) launcher {
	return func(a *analysis, c *command, depth int) {
		if _, rest, ok := a.options(c, spec); ok {
			if len(rest) < skip {
				c.runsNothing = true
				return
			}
			a.launchArgs(c, rest[skip:], depth)
		}
	}
}

func launchIonice(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "cnpPu", shortFlag: "th",
		longArg: []string{"class", "classdata", "pid", "pgid", "uid"}, longFlag: []string{"ignore", "help", "version"}})
	if !ok {
		return
	}
	if o.has("p", "P", "u", "pid", "pgid", "uid") {
		c.runsNothing = true // it changes running processes
		return
	}
	a.launchArgs(c, rest, depth)
}

func launchTaskset(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortFlag: "acphV", longFlag: []string{"all-tasks", "cpu-list", "pid", "help", "version"}})
	if !ok {
		return
	}
	if o.has("p", "pid") || len(rest) == 0 {
		c.runsNothing = true
		return
	}
	a.launchArgs(c, rest[1:], depth)
}

// launchEnv handles env [options] [NAME=VALUE]... [command [args]].
func launchEnv(a *analysis, c *command, depth int) {
	args := c.args
	for len(args) > 0 && args[0].exact() && args[0].text == "-" {
		args = args[1:] // a lone - means -i
	}
	sub := *c
	sub.args = args
	o, rest, ok := a.options(&sub, optSpec{shortArg: "uCS", shortFlag: "i0v",
		longArg:  []string{"unset", "chdir", "split-string"},
		longFlag: []string{"ignore-environment", "null", "debug", "help", "version", "block-signal", "default-signal", "ignore-signal", "list-signal-handling"}})
	if !ok {
		return
	}
	rest = a.leadingAssignments(c, rest)
	if rest == nil {
		return
	}
	if s, ok := o.value("S", "split-string"); ok {
		// env -S splits its value into words; check it as a script, with
		// the remaining words appended, which over-approximates it.
		texts, lit := literalArgs(rest)
		if !s.exact() || !lit {
			a.s.add(ruleLauncher, c.display(), "env -S needs a literal string and literal arguments to be checked")
			return
		}
		src := s.text
		for _, t := range texts {
			src += " " + shellQuote(t)
		}
		a.launchScript(c, src, []dialect{dialectPOSIX, dialectBash}, a.stdinOf(c), depth)
		return
	}
	a.launchArgs(c, rest, depth)
}

// leadingAssignments checks the NAME=VALUE words env and sudo take before
// the command, and returns the words after them (nil after a refusal).
func (a *analysis) leadingAssignments(c *command, rest []word) []word {
	for len(rest) > 0 {
		w := rest[0]
		name, isAssign, known := assignmentName(w)
		if !known {
			a.s.add(ruleLauncher, c.display(), fmt.Sprintf("cannot tell whether %s is a variable assignment or the command to run", w.src))
			return nil
		}
		if !isAssign {
			return rest
		}
		a.checkAssignedName(name, w.src)
		rest = rest[1:]
	}
	return rest
}

// assignmentName reports whether w is a NAME=VALUE word, and its name. known
// is false when expansions hide whether it is one.
func assignmentName(w word) (name string, isAssign, known bool) {
	if w.literal {
		name, _, isAssign = strings.Cut(w.text, "=")
		return name, isAssign, true
	}
	// NAME=$value: the name is written out, only the value is expanded.
	if w.node != nil && len(w.node.Parts) > 0 {
		if lit, ok := w.node.Parts[0].(*syntax.Lit); ok {
			text, _, _ := unescapeUnquoted(lit.Value)
			if n, _, ok := strings.Cut(text, "="); ok && n != "" {
				return n, true, true
			}
		}
	}
	return "", false, false
}

func launchXargs(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "aEdILnPs", shortOpt: "eil", shortFlag: "0prtxo",
		longArg:  []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longFlag: []string{"null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty", "show-limits", "help", "version", "eof", "replace", "max-lines"}})
	if !ok {
		return
	}
	if len(rest) == 0 {
		rest = []word{literalWord("echo")}
	}
	// With -I, -i or --replace, the input replaces a string inside the
	// arguments, which makes each of those arguments unknown.
	replace := ""
	if v, ok := o.value("I", "i", "replace"); ok && v.text != "" {
		replace = v.text
	} else if o.has("I", "i", "replace") {
		replace = "{}"
	}
	words := make([]word, 0, len(rest)+1)
	for _, w := range rest {
		if replace != "" && strings.Contains(w.text, replace) {
			w = unknownWord(w.src, false)
		}
		words = append(words, w)
	}
	words = append(words, unknownWord("(arguments read from input)", false))
	inner := newCommand(words[0], words[1:], c.stmt, c.an, nil)
	inner.stdinNull = true
	a.launch(c, inner, depth)
}

// findValueArgs are find primaries followed by one value.
var findValueArgs = setOf("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
	"-lname", "-ilname", "-type", "-xtype", "-size", "-perm", "-user", "-group", "-uid", "-gid", "-mtime", "-atime",
	"-ctime", "-mmin", "-amin", "-cmin", "-newer", "-anewer", "-cnewer", "-maxdepth", "-mindepth", "-links", "-inum",
	"-samefile", "-fstype", "-used", "-printf", "-fprint", "-fprint0", "-fls", "-context", "-regextype",
	"-files0-from", "-D", "-O")

func launchFind(a *analysis, c *command, depth int) {
	args := c.args
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.exact() {
			if !w.flagSafe {
				a.s.add(ruleLauncher, c.display(), fmt.Sprintf("find argument %s is not a literal word, so it could be -exec or -delete", w.src))
				return
			}
			continue
		}
		switch {
		case w.text == "-exec" || w.text == "-execdir" || w.text == "-ok" || w.text == "-okdir":
			end := i + 1
			for end < len(args) && !(args[end].exact() && (args[end].text == ";" || args[end].text == "+")) {
				end++
			}
			cmdWords := make([]word, 0, end-i-1)
			for _, cw := range args[i+1 : end] {
				if strings.Contains(cw.src, "{}") {
					// find puts a path there; paths start with the start
					// point, never with '-'.
					cw = unknownWord(cw.src, true)
				}
				cmdWords = append(cmdWords, cw)
			}
			if len(cmdWords) > 0 {
				a.launchAs(c, newCommand(cmdWords[0], cmdWords[1:], c.stmt, c.an, nil), "find "+w.text, depth)
			}
			i = end
		case w.text == "-fprintf":
			i += 2
		case findValueArgs[w.text] || strings.HasPrefix(w.text, "-newer"):
			i++
		}
	}
}

func launchSudo(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "CDgpRrTtUu", shortFlag: "AbBEeHhiKklnPSsVv",
		longArg: []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"},
		longFlag: []string{"askpass", "background", "bell", "preserve-env", "edit", "help", "set-home", "login", "remove-timestamp",
			"reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate", "version"}})
	if !ok {
		return
	}
	if o.has("e", "edit", "l", "list", "v", "validate", "k", "K", "V", "h", "help", "version", "remove-timestamp", "reset-timestamp") {
		c.runsNothing = true
		return
	}
	if rest = a.leadingAssignments(c, rest); rest != nil {
		a.launchArgs(c, rest, depth)
	}
}

func launchDoas(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "uC", shortFlag: "nsL"})
	if ok && !o.has("C", "L") {
		a.launchArgs(c, rest, depth)
	}
}

// launchMultiCall handles busybox and toybox: the first argument names the
// applet to run.
func launchMultiCall(a *analysis, c *command, depth int) {
	if len(c.args) == 0 || (c.args[0].exact() && strings.HasPrefix(c.args[0].text, "-")) {
		c.runsNothing = true
		return
	}
	a.launchArgs(c, c.args, depth)
}

func launchEval(a *analysis, c *command, depth int) {
	texts, ok := literalArgs(c.args)
	if !ok {
		a.s.add(ruleLauncher, c.display(), "eval runs the text of its arguments; they must be literal words to be checked")
		return
	}
	if src := strings.Join(texts, " "); strings.TrimSpace(src) != "" {
		a.launchScript(c, src, []dialect{a.dialect}, a.stdinOf(c), depth)
	}
}

func launchTrap(a *analysis, c *command, depth int) {
	args := c.args
	if len(args) > 0 && args[0].exact() && (args[0].text == "-l" || args[0].text == "-p") {
		c.runsNothing = true
		return
	}
	if len(args) > 0 && args[0].exact() && args[0].text == "--" {
		args = args[1:]
	}
	if len(args) < 2 {
		return // no action given, only signals to reset or list
	}
	if !args[0].exact() {
		a.s.add(ruleLauncher, c.display(), "the action of trap is a script; it must be a literal string to be checked")
		return
	}
	if src := args[0].text; src != "-" && strings.TrimSpace(src) != "" {
		a.launchScript(c, src, []dialect{a.dialect}, stdinSource{kind: stdinUnknown, desc: "whatever input the shell has when the trap fires"}, depth)
	}
}

func launchWatch(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "nq", shortOpt: "d", shortFlag: "bcCegprtwxhv",
		longArg:  []string{"interval", "equexit"},
		longFlag: []string{"beep", "color", "no-color", "differences", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "exec", "help", "version"}})
	if !ok || len(rest) == 0 {
		return
	}
	if o.has("x", "exec") {
		a.launchArgs(c, rest, depth)
		return
	}
	// Without -x, watch joins its arguments and runs them with sh -c.
	texts, lit := literalArgs(rest)
	if !lit {
		a.s.add(ruleLauncher, c.display(), "watch runs its arguments as a shell script; they must be literal words to be checked")
		return
	}
	a.launchScript(c, strings.Join(texts, " "), []dialect{dialectPOSIX, dialectBash}, stdinSource{kind: stdinEmpty}, depth)
}

func launchFlock(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "wEc", shortFlag: "sxunoFhV",
		longArg:  []string{"timeout", "wait", "conflict-exit-code", "command"},
		longFlag: []string{"shared", "exclusive", "unlock", "nonblock", "nb", "close", "no-fork", "verbose", "help", "version"}})
	if !ok {
		return
	}
	script, hasScript := o.value("c", "command")
	if !hasScript && len(rest) >= 3 && rest[1].exact() && (rest[1].text == "-c" || rest[1].text == "--command") {
		script, hasScript = rest[2], true
	}
	switch {
	case hasScript && !script.exact():
		a.s.add(ruleLauncher, c.display(), "flock -c runs a shell script; it must be a literal string to be checked")
	case hasScript:
		a.launchScript(c, script.text, []dialect{dialectPOSIX, dialectBash}, a.stdinOf(c), depth)
	case len(rest) >= 2:
		a.launchArgs(c, rest[1:], depth)
	default:
		c.runsNothing = true
	}
}

// launchScriptCmd handles util-linux script, whose -c runs a shell command.
func launchScriptCmd(a *analysis, c *command, depth int) {
	o, _, ok := a.options(c, optSpec{shortArg: "cEIOTBm", shortFlag: "aefqFhV",
		longArg:  []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"},
		longFlag: []string{"append", "return", "flush", "force", "quiet", "help", "version"}})
	if !ok {
		return
	}
	if s, has := o.value("c", "command"); has {
		if !s.exact() {
			a.s.add(ruleLauncher, c.display(), "script -c runs a shell command; it must be a literal string to be checked")
			return
		}
		a.launchScript(c, s.text, []dialect{dialectPOSIX, dialectBash}, a.stdinOf(c), depth)
	}
}
