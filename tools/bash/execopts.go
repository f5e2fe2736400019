package bash

import (
	"fmt"
	"strings"
)

// Programs with options that run commands: tar -I and --checkpoint-action,
// zip -TT, ssh -o ProxyCommand, rsync -e, man -P, sort
// --compress-program and the like. The command in such an option is
// checked as a shell script when it is a literal word, and refused when it
// is not. They are registered in the launchers table.

// execOpt names the options of one program that run a command.
type execOpt struct {
	// short are option letters whose value is a command.
	short string
	// long are long options whose value is a command.
	long []string
}

var execOpts = map[string]execOpt{
	"tar":     {short: "IF", long: []string{"use-compress-program", "to-command", "info-script", "new-volume-script", "rsh-command", "rmt-command"}},
	"zip":     {short: "", long: []string{"unzip-command"}},
	"rsync":   {short: "e", long: []string{"rsh"}},
	"man":     {short: "P", long: []string{"pager", "html"}},
	"sort":    {long: []string{"compress-program"}},
	"tcpdump": {short: "z"},
	"cpio":    {long: []string{"rsh-command", "to-command"}},
	"scp":     {short: "S"},
	"sftp":    {short: "S"},
}

func init() {
	for name := range execOpts {
		launchers[name] = launchExecOpts
	}
	launchers["ssh"] = launchExecOpts
	launchers["git"] = launchGit
	launchers["sed"] = launchSed
}

// optionValues returns the values of the options among args that spec
// names: -Xvalue, -X value, clusters such as -cIzstd, --name=value and
// --name value, abbreviations included. unknown is set when a word that
// is not literal could be one of them.
func optionValues(args []word, short string, long []string) (vals []word, unknown bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.exact() {
			if !w.flagSafe {
				unknown = true
			}
			continue
		}
		t := w.text
		switch {
		case t == "--":
			return vals, unknown
		case strings.HasPrefix(t, "--"):
			name, v, hasEq := strings.Cut(t[2:], "=")
			for _, l := range long {
				if name == l || len(name) >= 3 && strings.HasPrefix(l, name) {
					switch {
					case hasEq:
						vals = append(vals, literalWord(v))
					case i+1 < len(args):
						i++
						vals = append(vals, args[i])
					}
					break
				}
			}
		case strings.HasPrefix(t, "-") && len(t) > 1 && short != "":
			for j := 1; j < len(t); j++ {
				if !strings.ContainsRune(short, rune(t[j])) {
					continue
				}
				switch {
				case j+1 < len(t):
					vals = append(vals, literalWord(t[j+1:]))
				case i+1 < len(args):
					i++
					vals = append(vals, args[i])
				}
				break
			}
		}
	}
	return vals, unknown
}

// checkCommandOption checks the value of an option that runs a command.
func (a *analysis) checkCommandOption(c *command, v word, depth int) {
	if !v.exact() {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("%s runs the command %s given in an option; it must be a literal word to be checked", c.base, v.src))
		return
	}
	a.launchScript(c, v.text, []dialect{dialectPOSIX, dialectBash}, stdinSource{kind: stdinUnknown, desc: c.base + "'s data"}, depth)
}

func launchExecOpts(a *analysis, c *command, depth int) {
	var vals []word
	var unknown bool
	switch c.base {
	case "ssh", "scp", "sftp":
		vals, unknown = sshCommandOptions(a, c)
		if c.base != "ssh" {
			more, unk := optionValues(c.args, execOpts[c.base].short, nil)
			vals, unknown = append(vals, more...), unknown || unk
		}
	default:
		spec := execOpts[c.base]
		vals, unknown = optionValues(c.args, spec.short, spec.long)
	}
	switch c.base {
	case "tar":
		if len(c.args) > 0 && c.args[0].exact() && !strings.HasPrefix(c.args[0].text, "-") && strings.ContainsAny(c.args[0].text, "IF") {
			a.s.add(ruleLauncher, c.display(), "tar's old-style options I and F run a command whose position the policy does not work out; write -I PROGRAM")
		}
		actions, unk := optionValues(c.args, "", []string{"checkpoint-action"})
		unknown = unknown || unk
		for _, act := range actions {
			cmd, isExec := strings.CutPrefix(act.text, "exec=")
			switch {
			case !act.exact():
				a.s.add(ruleLauncher, c.display(), "tar --checkpoint-action must be a literal word to be checked: exec= runs a command")
			case isExec:
				vals = append(vals, literalWord(cmd))
			}
		}
	case "zip":
		for _, w := range c.args {
			if w.exact() && w.text == "-TT" && len(c.args) > 0 {
				if v, ok := nextArg(c.args, "-TT"); ok {
					vals = append(vals, v)
				}
			}
		}
	}
	if unknown {
		a.s.add(ruleLauncher, c.display(), fmt.Sprintf("an argument of %s is not a literal word, so it could be an option that runs a command", c.base))
	}
	for _, v := range vals {
		a.checkCommandOption(c, v, depth)
	}
}

func nextArg(args []word, opt string) (word, bool) {
	for i, w := range args {
		if w.exact() && w.text == opt && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return word{}, false
}

// sshExecKeys are ssh configuration keys whose value is a command ssh runs
// locally.
var sshExecKeys = setOf("proxycommand", "localcommand", "knownhostscommand", "remotecommand")

// sshCommandOptions returns the commands given with -o, and refuses -F: a
// configuration file can hold ProxyCommand and LocalCommand the policy
// cannot read.
func sshCommandOptions(a *analysis, c *command) ([]word, bool) {
	var vals []word
	opts, unknown := optionValues(c.args, "o", nil)
	for _, o := range opts {
		if !o.exact() {
			unknown = true
			continue
		}
		key, val, ok := strings.Cut(o.text, "=")
		if !ok {
			key, val, _ = strings.Cut(o.text, " ")
		}
		if sshExecKeys[strings.ToLower(strings.TrimSpace(key))] {
			vals = append(vals, literalWord(strings.TrimSpace(val)))
		}
	}
	if files, _ := optionValues(c.args, "F", nil); len(files) > 0 {
		a.s.add(ruleLauncher, c.display(), c.base+" -F reads a configuration file whose ProxyCommand or LocalCommand the policy cannot check")
	}
	return vals, unknown
}
