package bash

import (
	"fmt"
	"path"
	"strings"
)

// git runs programs named in its configuration (core.pager, core.sshCommand,
// alias.x=!cmd, filter drivers, ...), in some options (--upload-pack,
// rebase --exec) and in some subcommands (submodule foreach, bisect run).
// Configuration given on the command line or written with git config is
// code: it counts as an interpreter (see interpreters.go). Commands given in
// options and subcommands are checked as scripts.

// gitExecKeys are configuration keys (lower case, * for a subsection)
// whose value git runs or loads.
var gitExecKeys = []string{
	"core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.fsmonitor", "core.hookspath", "core.gitproxy",
	"core.alternaterefscommand", "sequence.editor", "diff.external", "diff.*.textconv", "diff.*.command", "difftool.*.cmd",
	"difftool.*.path", "mergetool.*.cmd", "mergetool.*.path", "merge.*.driver", "filter.*.clean", "filter.*.smudge",
	"filter.*.process", "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "pager.*", "web.browser",
	"browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path", "uploadpack.packobjectshook", "remote.*.uploadpack",
	"remote.*.receivepack", "include.path", "includeif.*.path", "protocol.allow", "protocol.*.allow", "sendemail.*",
	"ssh.variant", "init.templatedir", "gc.*", "receive.procreceiverefs", "uploadpack.hook",
}

// gitKeyRunsCode reports whether setting key to value makes git run or
// load something.
func gitKeyRunsCode(key, value string) bool {
	key = strings.ToLower(key)
	if strings.HasPrefix(key, "alias.") {
		return strings.HasPrefix(strings.TrimSpace(value), "!")
	}
	for _, k := range gitExecKeys {
		if ok, _ := path.Match(k, key); ok {
			return true
		}
		// A subsection may itself contain dots (diff.a.b.textconv).
		if strings.Count(k, "*") == 1 {
			pre, suf, _ := strings.Cut(k, "*")
			if strings.HasPrefix(key, pre) && strings.HasSuffix(key, suf) && len(key) > len(pre)+len(suf) {
				return true
			}
		}
	}
	return false
}

func launchGit(a *analysis, c *command, depth int) {
	args := c.args
	i := 0
	// Global options come before the subcommand.
	for ; i < len(args); i++ {
		w := args[i]
		if !w.exact() {
			if !w.flagSafe {
				a.s.add(ruleLauncher, c.display(), fmt.Sprintf("git argument %s is not a literal word, so it could be -c with a command in it", w.src))
				return
			}
			break
		}
		t := w.text
		switch {
		case t == "-c" && i+1 < len(args):
			i++
			a.gitConfigValue(c, args[i])
		case strings.HasPrefix(t, "-c") && len(t) > 2:
			a.gitConfigValue(c, literalWord(t[2:]))
		case t == "--config-env" && i+1 < len(args), strings.HasPrefix(t, "--config-env="):
			v := strings.TrimPrefix(t, "--config-env=")
			if t == "--config-env" {
				i++
				v = args[i].text
			}
			key, _, _ := strings.Cut(v, "=")
			if gitKeyRunsCode(key, "!") {
				a.s.add(ruleInterpreters, c.display(), fmt.Sprintf("git --config-env sets %s from a variable; that setting runs a command", key)+interpretersHint)
			}
		case strings.HasPrefix(t, "--exec-path="):
			a.s.add(ruleInterpreters, c.display(), "git --exec-path runs git's subcommands from another directory"+interpretersHint)
		case t == "-C" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix" || t == "--list-cmds" || t == "--attr-source":
			i++
		case strings.HasPrefix(t, "-"):
			// Other global options take no separate value.
		default:
			a.gitSubcommand(c, t, args[i+1:], depth)
			return
		}
	}
	c.runsNothing = true
}

// gitConfigValue checks one -c key=value.
func (a *analysis) gitConfigValue(c *command, w word) {
	if !w.exact() {
		a.s.add(ruleInterpreters, c.display(), fmt.Sprintf("git -c %s is not a literal word, so it could set a command to run", w.src)+interpretersHint)
		return
	}
	key, value, _ := strings.Cut(w.text, "=")
	if gitKeyRunsCode(key, value) {
		a.s.add(ruleInterpreters, c.display(), fmt.Sprintf("git -c %s makes git run a command or load code", key)+interpretersHint)
	}
}

func (a *analysis) gitSubcommand(c *command, sub string, rest []word, depth int) {
	switch sub {
	case "config":
		// git config KEY VALUE (or --add/--replace-all KEY VALUE) writes a
		// setting that later git commands obey.
		var operands []word
		for _, w := range rest {
			if !(w.exact() && strings.HasPrefix(w.text, "-")) {
				operands = append(operands, w)
			}
		}
		if len(operands) >= 2 {
			key := operands[0]
			if !key.exact() || gitKeyRunsCode(key.text, operands[1].text) || !operands[1].exact() && strings.HasPrefix(strings.ToLower(key.text), "alias.") {
				a.s.add(ruleInterpreters, c.display(), fmt.Sprintf("git config %s stores a command that later git commands run", key.src)+interpretersHint)
			}
		}
	case "submodule":
		for j, w := range rest {
			if w.exact() && w.text == "foreach" {
				texts, ok := literalArgs(rest[j+1:])
				if !ok {
					a.s.add(ruleLauncher, c.display(), "git submodule foreach runs its arguments as a shell command; they must be literal words to be checked")
					return
				}
				a.launchScript(c, strings.Join(texts, " "), []dialect{dialectPOSIX, dialectBash}, stdinSource{kind: stdinEmpty}, depth)
				return
			}
		}
	case "bisect":
		if len(rest) > 0 && rest[0].exact() && rest[0].text == "run" {
			a.launchArgs(c, rest[1:], depth)
		}
	case "rebase":
		vals, unknown := optionValues(rest, "x", []string{"exec"})
		a.execValues(c, vals, unknown, depth)
	case "difftool", "mergetool":
		vals, unknown := optionValues(rest, "x", []string{"extcmd"})
		a.execValues(c, vals, unknown, depth)
	case "filter-branch", "filter-repo":
		a.s.add(ruleInterpreters, c.display(), "git "+sub+" runs shell code given in its filters"+interpretersHint)
	case "clone", "fetch", "pull", "ls-remote", "push", "archive", "remote":
		vals, unknown := optionValues(rest, "u", []string{"upload-pack", "receive-pack", "exec"})
		a.execValues(c, vals, unknown, depth)
		for _, w := range rest {
			if w.exact() && strings.HasPrefix(w.text, "ext::") {
				a.s.add(ruleLauncher, c.display(), "an ext:: URL makes git run a command")
			}
		}
	}
}

func (a *analysis) execValues(c *command, vals []word, unknown bool, depth int) {
	if unknown {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("an argument of %s is not a literal word, so it could be an option that runs a command", c.base))
	}
	for _, v := range vals {
		a.checkCommandOption(c, v, depth)
	}
}
