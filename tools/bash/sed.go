package bash

import (
	"fmt"
	"strings"
)

// GNU sed runs shell commands: the e command runs a command (or the
// pattern space), and the e flag of s runs the result of the substitution.
// Its w and W commands and the w flag write files, and r and R read them.
// The policy reads sed scripts to find these: e is refused (what it runs
// comes from the data), and the files named by w, W, r and R are checked
// like arguments (denyArgs). --sandbox makes sed refuse e, w and r itself.

// sedScript is what the policy found in a sed script.
type sedScript struct {
	execs bool
	files []string
}

func launchSed(a *analysis, c *command, depth int) {
	sandboxed := false
	var scripts []word
	var hasScriptOpt, hasFile bool
	var firstOperand *word
	for i := 0; i < len(c.args); i++ {
		w := c.args[i]
		if !w.exact() {
			if firstOperand == nil && !hasScriptOpt {
				firstOperand = &c.args[i]
			}
			continue
		}
		t := w.text
		switch {
		case t == "--":
			if i+1 < len(c.args) && firstOperand == nil && !hasScriptOpt {
				firstOperand = &c.args[i+1]
			}
			i = len(c.args)
		case t == "--sandbox":
			sandboxed = true
		case t == "-e" || t == "--expression" || t == "-f" || t == "--file":
			if i+1 < len(c.args) {
				i++
				if t == "-f" || t == "--file" {
					hasFile = true
				} else {
					scripts = append(scripts, c.args[i])
				}
			}
			hasScriptOpt = true
		case strings.HasPrefix(t, "--expression="):
			scripts, hasScriptOpt = append(scripts, literalWord(strings.TrimPrefix(t, "--expression="))), true
		case strings.HasPrefix(t, "--file="):
			hasFile, hasScriptOpt = true, true
		case t == "-l" || t == "--line-length":
			i++
		case strings.HasPrefix(t, "--"):
		case strings.HasPrefix(t, "-") && len(t) > 1:
			// A cluster such as -ne 'p' or -nf x: e and f take the rest
			// of the word or the next one.
			for j := 1; j < len(t); j++ {
				if t[j] == 'i' {
					break // -i takes the rest of the word as a suffix
				}
				if t[j] != 'e' && t[j] != 'f' && t[j] != 'l' {
					continue
				}
				var v word
				switch {
				case j+1 < len(t):
					v = literalWord(t[j+1:])
				case i+1 < len(c.args):
					i++
					v = c.args[i]
				}
				switch t[j] {
				case 'e':
					scripts, hasScriptOpt = append(scripts, v), true
				case 'f':
					hasFile, hasScriptOpt = true, true
				}
				break
			}
		default:
			if firstOperand == nil && !hasScriptOpt {
				firstOperand = &c.args[i]
			}
		}
	}
	if !hasScriptOpt && firstOperand != nil {
		scripts = append(scripts, *firstOperand)
	}
	if sandboxed {
		return
	}
	if hasFile {
		a.s.add(ruleLauncher, c.display(), "sed -f runs a script file the policy cannot read, which may hold e commands that run programs; add --sandbox or give the script inline")
	}
	for _, s := range scripts {
		if !s.exact() {
			a.s.add(ruleLauncher, c.display(), fmt.Sprintf("the sed script %s is not a literal string, so it could hold an e command that runs a program; add --sandbox or write the script literally", s.src))
			continue
		}
		info, ok := scanSed(s.text)
		switch {
		case !ok:
			a.s.add(ruleLauncher, c.display(), "the policy cannot read this sed script, so it cannot rule out e commands that run programs; add --sandbox")
		case info.execs:
			a.s.add(ruleLauncher, c.display(), "sed's e command and the e flag of s run the text of the data as a shell command, which cannot be checked")
		}
		for _, f := range info.files {
			c.pathArgs = append(c.pathArgs, literalWord(f))
		}
	}
}

// scanSed reads a GNU sed script. ok is false when it holds something the
// scanner does not understand.
func scanSed(s string) (info sedScript, ok bool) {
	i := 0
	restOfLine := func() string {
		end := strings.IndexByte(s[i:], '\n')
		if end < 0 {
			end = len(s) - i
		}
		v := s[i : i+end]
		i += end
		return v
	}
	// delimited reads text up to the unescaped delimiter d.
	delimited := func(d byte) bool {
		for i < len(s) {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case d:
				i++
				return true
			case '\n':
				if d != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	// twoFields reads the pattern and the replacement of s or y, each
	// ended by the delimiter d.
	twoFields := func(d byte) bool {
		pattern := delimited(d)
		return pattern && delimited(d)
	}
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	address := func() bool {
		switch {
		case i < len(s) && s[i] == '/':
			i++
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i+1 < len(s) && s[i] == '\\':
			d := s[i+1]
			i += 2
			if !delimited(d) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case i < len(s) && s[i] == '$':
			i++
		default:
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~' || s[i] == '+') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		skipSpace()
		if i >= len(s) {
			break
		}
		if s[i] == ';' || s[i] == '\n' || s[i] == '}' {
			i++
			continue
		}
		if !address() {
			return info, false
		}
		skipSpace()
		if i < len(s) && s[i] == ',' {
			i++
			skipSpace()
			if !address() {
				return info, false
			}
		}
		skipSpace()
		for i < len(s) && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= len(s) {
			return info, false
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#', ':':
			restOfLine()
		case 'b', 't', 'T', 'v':
			for i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '}' {
				i++
			}
		case 'l', 'q', 'Q', 'L':
			skipSpace()
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case 'a', 'i', 'c':
			for {
				line := restOfLine()
				if !strings.HasSuffix(line, "\\") || i >= len(s) {
					break
				}
				i++
			}
		case 'r', 'R', 'w', 'W':
			skipSpace()
			info.files = append(info.files, restOfLine())
		case 'e':
			info.execs = true
			restOfLine()
		case 'y':
			if i >= len(s) {
				return info, false
			}
			d := s[i]
			i++
			if !twoFields(d) {
				return info, false
			}
		case 's':
			if i >= len(s) || s[i] == '\\' || s[i] == '\n' {
				return info, false
			}
			d := s[i]
			i++
			if !twoFields(d) {
				return info, false
			}
		flags:
			for i < len(s) {
				switch f := s[i]; {
				case f == 'e':
					info.execs = true
					i++
				case f == 'w':
					i++
					skipSpace()
					info.files = append(info.files, restOfLine())
					break flags
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					i++
				default:
					break flags
				}
			}
		default:
			return info, false
		}
	}
	return info, true
}
