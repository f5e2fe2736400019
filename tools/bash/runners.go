package bash

import (
	"fmt"
	"path"
	"strings"
)

// Programs that run other programs, beyond the classic launchers of
// launchers.go: tracers, schedulers, credential and architecture changers,
// and the dynamic loader. Each one named here is unwrapped when its
// options are known, so the program it runs is checked like any other; an
// option the policy does not know is a refusal, because it could be the
// one that takes a value and move the command to another word. Programs
// whose options cannot be parsed at all are refused as a class
// (opaqueRunners), naming what they do.

func init() {
	more := map[string]launcher{
		"strace": launchStrace,
		"ltrace": prefixLauncher(optSpec{shortArg: "aAeEflnopsuwxXDFL", shortFlag: "bcCdhiirStTVz",
			longArg:  []string{"align", "config", "indent", "library", "output", "user", "where", "debug"},
			longFlag: []string{"demangle", "help", "version", "no-signals"}}),
		"chrt": launchChrt,
		"prlimit": pidOrCommandLauncher(optSpec{shortOpt: "AcdefilmnqrstuvxyY", shortArg: "po", shortFlag: "hV",
			longArg: []string{"pid", "output"},
			longFlag: []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc",
				"rss", "rtprio", "rttime", "sigpending", "stack", "noheadings", "raw", "verbose", "help", "version"}}),
		"setpriv": launchSetpriv,
		"setarch": launchSetarch,
		"linux32": prefixLauncher(setarchSpec),
		"linux64": prefixLauncher(setarchSpec),
		"i386":    prefixLauncher(setarchSpec),
		"x86_64":  prefixLauncher(setarchSpec),
		"numactl": prefixLauncher(optSpec{shortArg: "iNmCpPwb", shortFlag: "alsHS",
			longArg: []string{"interleave", "cpunodebind", "membind", "physcpubind", "preferred", "preferred-many", "weighted-interleave"},
			longFlag: []string{"all", "localalloc", "show", "hardware", "huge", "balancing", "length", "offset", "shmmode",
				"shmid", "shm", "file", "touch", "strict", "dump", "dump-nodes", "help", "version"}}),
		"valgrind":  launchSingleTokenOptions,
		"eatmydata": prefixLauncher(optSpec{}),
		"nocache":   prefixLauncher(optSpec{shortArg: "n", shortFlag: "D"}),
		"chronic":   prefixLauncher(optSpec{shortFlag: "ev"}),
		"ifne":      prefixLauncher(optSpec{shortFlag: "n"}),
		"choom":     pidOrCommandLauncher(optSpec{shortArg: "pn", shortFlag: "hV", longArg: []string{"pid", "adjust"}, longFlag: []string{"help", "version"}}),
	}
	for name, l := range more {
		launchers[name] = l
	}
}

var setarchSpec = optSpec{shortFlag: "vRFZLXBIST3h",
	longFlag: []string{"verbose", "addr-no-randomize", "fdpic-funcptrs", "mmap-page-zero", "addr-compat-layout",
		"read-implies-exec", "32bit", "short-inode", "whole-seconds", "sticky-timeouts", "3gb", "4gb", "uname-2.6", "list", "help", "version"}}

// isDynamicLoader reports whether base names the dynamic loader, which
// runs the program file it is given (ld-linux-x86-64.so.2 /usr/bin/id):
// a way to run a program without executing its file.
func isDynamicLoader(base string) bool {
	for _, g := range []string{"ld-linux*.so*", "ld.so", "ld.so.*", "ld64.so*", "ld-musl-*.so*", "ld-*.so"} {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
	}
	return false
}

// launchLoader unwraps the dynamic loader; the library options load code
// that the policy never sees.
func launchLoader(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{
		longArg:  []string{"library-path", "inhibit-rpath", "audit", "preload", "argv0", "glibc-hwcaps-prepend", "glibc-hwcaps-mask"},
		longFlag: []string{"list", "verify", "inhibit-cache", "help", "version", "list-tunables", "list-diagnostics"}})
	if !ok {
		return
	}
	if o.has("library-path", "audit", "preload", "glibc-hwcaps-prepend") {
		a.s.add(ruleEnvInjection, c.display(), "the dynamic loader's --library-path, --audit and --preload load code the policy never sees")
	}
	if o.has("list", "verify", "help", "version", "list-tunables", "list-diagnostics") {
		c.runsNothing = true
		return
	}
	a.launchArgs(c, rest, depth)
}

func launchStrace(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "abeEIoOpPsSuUX", shortFlag: "cCdDfFhikqrtTvVwxyYzZn",
		longArg: []string{"columns", "abbrev", "trace", "signal", "status", "raw", "read", "write", "fault", "inject", "kvm",
			"quiet", "decode-fds", "silent", "env", "output", "summary-columns", "attach", "trace-path", "string-limit", "summary-sort-by",
			"user", "const-print-style", "instruction-pointer", "stack-trace", "syscall-limit", "detach-on", "seccomp-bpf"},
		longFlag: []string{"summary-only", "summary", "debug", "daemonize", "follow-forks", "output-separately", "help", "no-abbrev",
			"relative-timestamps", "absolute-timestamps", "timestamps", "syscall-times", "verbose", "version", "summary-wall-clock",
			"successful-only", "failed-only", "decode-pids", "interruptible", "output-append-mode", "tips", "secontext", "kill-on-exit", "always-show-pid", "argv0"}})
	if !ok {
		return
	}
	for _, opt := range o {
		switch opt.name {
		case "E", "env":
			name, isAssign, known := assignmentName(opt.value)
			switch {
			case !known:
				a.s.add(ruleEnvInjection, c.display(), fmt.Sprintf("strace -E %s sets a variable the policy cannot name", opt.value.src))
			case isAssign:
				a.checkAssignedName(name, c.display())
			}
		case "o", "output":
			// strace -o '|cmd' pipes the trace into a shell command.
			if v := opt.value; !v.exact() || strings.HasPrefix(v.text, "|") || strings.HasPrefix(v.text, "!") {
				if !v.exact() {
					a.s.add(ruleLauncher, c.display(), "strace -o runs a command when its value starts with | or !; the value must be a literal word to be checked")
					continue
				}
				a.launchScript(c, v.text[1:], []dialect{dialectPOSIX, dialectBash}, stdinSource{kind: stdinUnknown, desc: "the trace"}, depth)
			}
		case "p", "attach":
			a.s.add(groupPrivilege, c.display(), "strace -p attaches to a running process and can read its memory and secrets ("+groupWhy(groupPrivilege)+")")
		case "D", "daemonize":
			a.s.add(groupDetach, c.display(), "strace -D runs the tracer as a detached grandchild ("+groupWhy(groupDetach)+")")
		}
	}
	a.launchArgs(c, rest, depth)
}

func launchChrt(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortArg: "TPD", shortFlag: "abdefiomrRvhVp",
		longArg:  []string{"sched-runtime", "sched-period", "sched-deadline"},
		longFlag: []string{"all-tasks", "batch", "deadline", "ext", "fifo", "idle", "other", "rr", "reset-on-fork", "max", "pid", "verbose", "help", "version"}})
	if !ok {
		return
	}
	if o.has("p", "pid", "m", "max") || len(rest) < 2 {
		c.runsNothing = true // it changes or shows running processes
		return
	}
	a.launchArgs(c, rest[1:], depth)
}

// pidOrCommandLauncher is for programs that either change a running
// process (-p/--pid PID) or run a command with the change (prlimit,
// choom).
func pidOrCommandLauncher(spec optSpec) launcher {
	return func(a *analysis, c *command, depth int) {
		o, rest, ok := a.options(c, spec)
		if !ok {
			return
		}
		if o.has("p", "pid") {
			c.runsNothing = true
			return
		}
		a.launchArgs(c, rest, depth)
	}
}

func launchSetpriv(a *analysis, c *command, depth int) {
	o, rest, ok := a.options(c, optSpec{shortFlag: "dhV",
		longArg: []string{"groups", "inh-caps", "ambient-caps", "bounding-set", "securebits", "pdeathsig", "selinux-label",
			"apparmor-profile", "landlock-access", "landlock-rule", "ruid", "euid", "rgid", "egid", "reuid", "regid", "ptracer"},
		longFlag: []string{"dump", "no-new-privs", "clear-groups", "keep-groups", "init-groups", "reset-env", "help", "version", "seccomp-filter"}})
	if !ok {
		return
	}
	if o.has("ruid", "euid", "rgid", "egid", "reuid", "regid", "inh-caps", "ambient-caps", "groups", "init-groups") {
		a.s.add(groupPrivilege, c.display(), "setpriv changes the user, groups or capabilities a program runs with ("+groupWhy(groupPrivilege)+")")
	}
	if o.has("d", "dump", "h", "help", "V", "version") {
		c.runsNothing = true
		return
	}
	a.launchArgs(c, rest, depth)
}

// launchSetarch handles setarch ARCH [options] [program [args]].
func launchSetarch(a *analysis, c *command, depth int) {
	if len(c.args) == 0 || !c.args[0].exact() || strings.HasPrefix(c.args[0].text, "-") {
		if len(c.args) > 0 && c.args[0].exact() && (c.args[0].text == "--list" || c.args[0].text == "-h" || c.args[0].text == "--help" || c.args[0].text == "--version") {
			c.runsNothing = true
			return
		}
		a.s.add(ruleLauncher, c.display(), "setarch needs a literal architecture before its options")
		return
	}
	sub := *c
	sub.args = c.args[1:]
	if _, rest, ok := a.options(&sub, setarchSpec); ok {
		if len(rest) == 0 {
			// setarch without a program runs the user's shell.
			a.s.add(ruleUnverifiable, c.display(), "setarch without a program starts a shell that reads its commands from standard input")
			return
		}
		a.launchArgs(c, rest, depth)
	}
}

// launchSingleTokenOptions handles programs whose options are all one
// word (--name=value), such as valgrind.
func launchSingleTokenOptions(a *analysis, c *command, depth int) {
	for i, w := range c.args {
		if !w.exact() {
			a.s.add(ruleLauncher, c.display(), fmt.Sprintf("cannot tell which command %s runs: argument %s is not a literal word", c.base, w.src))
			return
		}
		if w.text == "--" {
			a.launchArgs(c, c.args[i+1:], depth)
			return
		}
		if !strings.HasPrefix(w.text, "-") {
			a.launchArgs(c, c.args[i:], depth)
			return
		}
	}
	c.runsNothing = true
}

// opaqueRunners run a program or code given in their arguments in a way
// the policy does not parse. They are refused in both modes; run the
// program directly instead.
var opaqueRunners = map[string]string{
	"perf":             "perf record/stat/trace run the program they are given",
	"fakeroot":         "fakeroot runs a program under a preloaded library",
	"firejail":         "firejail runs the program it is given with its own options",
	"bwrap":            "bwrap runs the program it is given in a namespace it sets up",
	"proot":            "proot runs the program it is given",
	"cgexec":           "cgexec runs the program it is given",
	"runcon":           "runcon runs the program it is given in another security context",
	"faketime":         "faketime runs the program it is given under a preloaded library",
	"torsocks":         "torsocks runs the program it is given under a preloaded library",
	"tsocks":           "tsocks runs the program it is given under a preloaded library",
	"proxychains":      "proxychains runs the program it is given under a preloaded library",
	"proxychains4":     "proxychains runs the program it is given under a preloaded library",
	"trickle":          "trickle runs the program it is given under a preloaded library",
	"cpulimit":         "cpulimit runs or attaches to the program it is given",
	"catchsegv":        "catchsegv runs the program it is given under a preloaded library",
	"xvfb-run":         "xvfb-run runs the program it is given",
	"dbus-run-session": "dbus-run-session runs the program it is given",
	"dbus-launch":      "dbus-launch runs the program it is given",
	"ssh-agent":        "ssh-agent runs the program it is given",
	"sg":               "sg runs a command with another group",
	"newgrp":           "newgrp starts a shell with another group",
	"entr":             "entr runs the program it is given whenever files change",
	"parallel":         "parallel runs its arguments as shell commands",
	"run-parts":        "run-parts runs every program in a directory",
	"rlwrap":           "rlwrap runs the program it is given",
	"gdbserver":        "gdbserver runs or attaches to a program",
	"lldb":             "lldb runs and controls programs",
	"gdb":              "gdb runs and controls programs and runs commands given with -ex, -x and .gdbinit",
}

// checkOpaqueRunner refuses programs of opaqueRunners, except when they
// only print help or a version.
func (a *analysis) checkOpaqueRunner(c *command) {
	why, ok := opaqueRunners[c.base]
	if !ok {
		return
	}
	if len(c.args) == 1 && c.args[0].exact() && (c.args[0].text == "--version" || c.args[0].text == "--help" || c.args[0].text == "-h") {
		return
	}
	if c.base == "perf" && len(c.args) > 0 && c.args[0].exact() && (c.args[0].text == "report" || c.args[0].text == "list" || c.args[0].text == "annotate") {
		return
	}
	a.s.add(ruleLauncher, c.display(), why+"; the policy cannot tell what that is, so run the program directly")
}
