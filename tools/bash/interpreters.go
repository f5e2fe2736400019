package bash

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Interpreters run code the policy cannot check: python3 -c, node -e,
// perl -e, a Makefile's recipes, a package's scripts, awk's system(),
// git -c core.pager=..., vim -c '!cmd'. Whether they may run is the
// tool's "interpreters" setting: off (the default) refuses them with the
// rule "interpreters", on lets them run. The refusal is a finding of its
// own rule so that an approval step can offer to run the command rather
// than refuse it (see Refusal.OnlyRules).
//
// In allow mode the allow list decides which interpreter programs run
// (listing python3 allows it); code smuggled through the options of an
// ordinary program (awk, git, vim) is judged by the setting in both modes.

const (
	interpretersOff = "off"
	interpretersOn  = "on"
)

// ruleInterpreters is the rule of commands that run code in a language
// the policy does not read.
const ruleInterpreters = "interpreters"

const interpretersHint = `; interpreters are off for this tool (set "interpreters": "on" in its config to allow them)`

// codeRunners run code from files or configuration in the workspace, which
// the model can write: build tools, package managers and language
// toolchains. They count as interpreters.
var codeRunners = setOf("make", "gmake", "bmake", "ninja", "just", "cmake", "npm", "npx", "pnpm", "pnpx", "yarn", "cargo",
	"mvn", "gradle", "ant", "sbt", "rake", "bundle", "gem", "tox", "nox", "pytest", "poetry", "pipenv", "uv", "uvx",
	"pip", "pip3", "dotnet", "java", "scala", "kotlin", "groovy", "erl", "elixir", "iex", "mix", "clojure", "julia",
	"octave", "m4", "dc", "gnuplot", "sqlite3", "jrunscript", "ed", "ex", "red")

// goCodeSubcommands are the go subcommands that run code they build.
var goCodeSubcommands = setOf("run", "test", "generate", "tool")

var editorNames = setOf("vi", "vim", "nvim", "view", "vimdiff", "rvim", "gvim", "vim.basic", "vim.tiny", "emacs", "emacs-nox")

// runsCode explains why c runs code the policy cannot check, or returns
// "". interpreterOnly is set when c is an interpreter program, which the
// allow list may name.
func runsCode(c *command) (why string, interpreterOnly bool) {
	if onlyAsksVersion(c.args) {
		return "", false
	}
	switch {
	case isInterpreter(c.base):
		return c.base + " runs code the policy cannot check", true
	case codeRunners[c.base]:
		return c.base + " runs code from files, scripts or configuration the policy cannot check", true
	case c.base == "go":
		for _, w := range c.args {
			if !w.exact() {
				return "go with an argument that is not a literal word may run code it builds", true
			}
			if t := strings.TrimLeft(w.text, "-"); strings.HasPrefix(w.text, "-") && (strings.HasPrefix(t, "exec") || strings.HasPrefix(t, "toolexec") || strings.HasPrefix(t, "vettool")) {
				return "go -exec, -toolexec and -vettool run a program on what go builds", true
			}
		}
		for _, w := range c.args {
			if !strings.HasPrefix(w.text, "-") {
				if goCodeSubcommands[w.text] {
					return "go " + w.text + " runs the code it builds", true
				}
				break
			}
		}
	case awkNames[c.base]:
		if why := awkRunsCommands(c); why != "" {
			return why, false
		}
	case editorNames[c.base]:
		for _, w := range c.args {
			if !w.exact() && !w.flagSafe {
				return c.base + " has an argument that is not a literal word, which could be an option that runs editor commands", false
			}
			if editorCodeOption(c.base, w.text) {
				return c.base + " " + w.text + " runs editor commands, which can run any program", false
			}
		}
	}
	return "", false
}

func onlyAsksVersion(args []word) bool {
	return len(args) == 1 && args[0].exact() && slices.Contains([]string{"--version", "-V", "-v", "--help", "-h", "version"}, args[0].text)
}

func editorCodeOption(base, t string) bool {
	if strings.HasPrefix(base, "emacs") {
		for _, o := range []string{"--eval", "-l", "--load", "-f", "--funcall", "--script", "-x", "--batch", "-batch", "--load-path"} {
			if t == o || strings.HasPrefix(t, o+"=") {
				return true
			}
		}
		return false
	}
	if strings.HasPrefix(t, "+") {
		return true
	}
	for _, o := range []string{"-c", "--cmd", "-S", "-s", "-u", "-U", "--startuptime", "-w", "-W"} {
		if t == o {
			return true
		}
	}
	return strings.HasPrefix(t, "-c") && len(t) > 2
}

// awkCode matches awk code that runs commands or loads code.
var awkCode = regexp.MustCompile(`\bsystem\s*\(|\|\s*&|\|\s*getline|@load|@include|\b(print|printf)\b[^;{}\n]*[^|]\|[^|]`)

// awkRunsCommands looks at an awk program for the ways awk runs commands.
func awkRunsCommands(c *command) string {
	var programs []word
	hasProgramOpt := false
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		if !w.exact() {
			if !hasProgramOpt {
				programs = append(programs, w)
				hasProgramOpt = true
			}
			continue
		}
		t := w.text
		switch {
		case t == "-f" || t == "--file" || strings.HasPrefix(t, "--file=") || t == "-E" || t == "--exec" || t == "-i" || t == "--include":
			return c.base + " -f, -E and -i run an awk program from a file the policy cannot read"
		case t == "-l" || t == "--load" || strings.HasPrefix(t, "--load="):
			return c.base + " -l loads a shared library"
		case t == "-e" || t == "--source":
			if i+1 < len(c.args) {
				i++
				programs = append(programs, c.args[i])
			}
			hasProgramOpt = true
		case t == "-v" || t == "-F" || t == "--assign" || t == "--field-separator":
			i++
		case t == "--":
			if i+1 < len(c.args) && !hasProgramOpt {
				programs = append(programs, c.args[i+1])
				hasProgramOpt = true
			}
			i = len(c.args)
		case strings.HasPrefix(t, "-f") && len(t) > 2:
			return c.base + " -f runs an awk program from a file the policy cannot read"
		case strings.HasPrefix(t, "-"):
		default:
			if !hasProgramOpt {
				programs = append(programs, w)
				hasProgramOpt = true
			}
		}
	}
	for _, p := range programs {
		if !p.exact() {
			return fmt.Sprintf("the awk program %s is not a literal string, so it could call system() or pipe to a command", p.src)
		}
		if awkCode.MatchString(p.text) {
			return "the awk program runs commands (system(), a pipe to or from a command, or @load)"
		}
	}
	return ""
}

// checkInterpreters applies the interpreters setting to c.
func (a *analysis) checkInterpreters(c *command) {
	p := a.s.p
	if p.interpreters == interpretersOn {
		return
	}
	why, program := runsCode(c)
	if why == "" {
		return
	}
	if program && p.mode == modeAllow {
		return // the allow list named it (or refused it already)
	}
	a.s.add(ruleInterpreters, c.display(), why+interpretersHint)
}

// execEnvName reports whether a variable names a command or code that
// programs run: a pager, an editor, git's ssh command, options an
// interpreter reads at start-up.
func execEnvName(name string) (string, bool) {
	upper := strings.ToUpper(name)
	switch {
	case slices.Contains([]string{"PAGER", "MANPAGER", "GIT_PAGER", "EDITOR", "VISUAL", "GIT_EDITOR", "SYSTEMD_EDITOR", "SUDO_EDITOR",
		"LESSOPEN", "LESSCLOSE", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",
		"GIT_EXEC_PATH", "GIT_TEMPLATE_DIR", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
		"BROWSER", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "PYTHONSTARTUP",
		"PYTHONPATH", "PYTHONHOME", "PYTHONINSPECT", "TAR_OPTIONS", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "AWKPATH", "AWKLIBPATH",
		"VIMINIT", "EXINIT", "MYVIMRC", "ZDOTDIR"}, upper):
		return "programs read a command or code to run from it", true
	case strings.HasPrefix(upper, "GIT_CONFIG_KEY_") || strings.HasPrefix(upper, "GIT_CONFIG_VALUE_"):
		return "git reads configuration, which can name commands, from it", true
	}
	return "", false
}
