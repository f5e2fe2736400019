package bash

import (
	"fmt"
)

// Bash builtins that run a string as code: mapfile and readarray evaluate
// their -C callback, and compgen runs its -C command and expands its -W word
// list (command substitutions included). The strings are checked as
// scripts, like eval's. They are registered in the launchers table.

func launchMapfile(a *analysis, c *command, depth int) {
	o, _, ok := a.options(c, optSpec{shortArg: "dnOsuCc", shortFlag: "t"})
	if !ok {
		return
	}
	if cb, has := o.value("C"); has {
		a.codeString(c, "-C", cb, "", depth)
	}
}

func launchCompgen(a *analysis, c *command, depth int) {
	o, _, ok := a.options(c, optSpec{shortArg: "oAGWFCXPSV", shortFlag: "abcdefgjksuvI"})
	if !ok {
		return
	}
	if cmd, has := o.value("C"); has {
		a.codeString(c, "-C", cmd, "", depth)
	}
	if words, has := o.value("W"); has {
		// The word list is expanded like the words of a command.
		a.codeString(c, "-W", words, ": ", depth)
	}
}

// codeString checks the value of an option that the builtin runs as code,
// prefixed with prefix.
func (a *analysis) codeString(c *command, option string, w word, prefix string, depth int) {
	if !w.exact() {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("%s %s runs its value as code; it must be a literal string to be checked", c.base, option))
		return
	}
	a.launchScript(c, prefix+w.text, []dialect{a.dialect}, stdinSource{kind: stdinUnknown, desc: "the builtin's input"}, depth)
}
