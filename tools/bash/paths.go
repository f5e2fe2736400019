package bash

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Paths. Two rules look at where the files a command names really are:
// denyArgs (a denied path, and everything under a denied directory) and
// the destructive group's rule that recursive rm, mv, chmod -R, chown -R
// and chgrp -R stay inside the workspace. A relative path is resolved
// against every directory the script may be in when it runs: the work
// directory and every place a cd, pushd or env -C in the check can lead
// to, in any order (cd /etc; cat shadow reaches /etc/shadow). A cd whose
// target cannot be known makes relative paths unknowable.

// pathUse is a word a command uses as a file name: an argument, a
// redirect target, a file of sed's w command.
type pathUse struct {
	subject string
	w       word
	// write is set for a use that writes the file (serverUses).
	write bool
}

// maxWorkDirs bounds the directories the policy follows cd through.
const maxWorkDirs = 64

// workDirs returns every directory a command of the check may run in, and
// false when a cd goes somewhere the policy cannot know.
func (s *session) workDirs() ([]string, bool) {
	home := os.Getenv("HOME")
	targets, known := s.cdTargets(home)
	if s.cdpathSet {
		known = false
	}
	dirs := []string{s.workDir}
	seen := map[string]bool{s.workDir: true}
	for changed := true; changed && len(dirs) <= maxWorkDirs; {
		changed = false
		for _, t := range targets {
			for _, d := range dirs {
				n := resolvePath(d, t, home)
				if !seen[n] {
					seen[n] = true
					dirs = append(dirs, n)
					changed = true
				}
			}
		}
	}
	if len(dirs) > maxWorkDirs {
		known = false
	}
	return dirs, known
}

// resolvePath makes p absolute against dir, with ~ as home.
func resolvePath(dir, p, home string) string {
	switch {
	case p == "~":
		return path.Clean(home)
	case strings.HasPrefix(p, "~/"):
		return path.Join(home, p[2:])
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	}
	return path.Join(dir, p)
}

// checkPaths applies the path rules once every command of the check is
// known.
func (s *session) checkPaths() {
	s.checkServerPaths()
	if len(s.p.denyArgs) == 0 && !s.p.enabled(groupDestructive) {
		return
	}
	dirs, known := s.workDirs()
	if len(s.p.denyArgs) > 0 {
		if !known {
			s.add(ruleDenyArgs, "cd", "the script changes to a directory the policy cannot know, so relative paths cannot be checked against denyArgs; use literal directory names")
		}
		for _, u := range s.pathUses {
			s.checkDenyArg(u, dirs)
		}
	}
	if s.p.enabled(groupDestructive) {
		for _, c := range s.commands {
			s.checkRecursive(c, dirs, known)
		}
	}
}

// checkDenyArg refuses a word that names a denied argument, or a path in
// or under a denied path from any directory the script may be in.
func (s *session) checkDenyArg(u pathUse, dirs []string) {
	w := u.w
	if !w.literal {
		s.add(ruleDenyArgs, u.subject, fmt.Sprintf("argument %s is not a literal word, so it cannot be checked against denyArgs", w.src))
		return
	}
	for _, p := range s.p.denyArgs {
		if argMatches(p, w) || s.underDeniedPath(p, w, dirs) {
			s.add(ruleDenyArgs, u.subject, fmt.Sprintf("argument %s names a path or argument denied by the tool's denyArgs", w.src))
			return
		}
	}
}

// underDeniedPath reports whether w, resolved from any of dirs, is the
// path pattern p or lies under it.
func (s *session) underDeniedPath(p string, w word, dirs []string) bool {
	if !strings.Contains(p, "/") {
		return false
	}
	if !strings.HasPrefix(p, "/") {
		p = path.Join(s.p.workspace, p)
	}
	values := []string{w.text}
	if _, v, ok := strings.Cut(w.text, "="); ok {
		values = append(values, v)
	}
	if len(w.text) > 2 && w.text[0] == '-' && w.text[1] != '-' {
		values = append(values, w.text[2:])
	}
	home := os.Getenv("HOME")
	for _, v := range values {
		if v == "" || strings.HasPrefix(v, "-") {
			continue
		}
		for _, d := range dirs {
			for abs := resolvePath(d, v, home); ; abs = path.Dir(abs) {
				if valueMatches(word{text: abs, literal: true, glob: w.glob}, p) {
					return true
				}
				if abs == "/" || abs == "." {
					break
				}
			}
		}
	}
	return false
}

// systemDirs are refused as targets of recursive changes even inside a
// workspace that contains them.
var systemDirs = setOf("/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt",
	"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin",
	"/usr/share", "/var", "/var/lib", "/var/log")

// recursiveChange reports whether c changes whole trees (rm -r, chmod -R,
// chown -R, chgrp -R) or moves files (mv), and returns its path operands.
func recursiveChange(c *command) (label string, operands []word, ok bool) {
	var opts []word
	afterDashes := false
	for _, w := range c.args {
		switch {
		case afterDashes:
			operands = append(operands, w)
		case w.exact() && w.text == "--":
			afterDashes = true
		case w.exact() && strings.HasPrefix(w.text, "-") && len(w.text) > 1:
			opts = append(opts, w)
		default:
			operands = append(operands, w)
		}
	}
	flags := flagsOf(c.base, opts, []string{"--recursive", "--target-directory"})
	switch c.base {
	case "rm":
		if !flags.has("rm", "-r") {
			return "", nil, false
		}
		return "rm -r", operands, true
	case "mv":
		if v, has := optionValue(c.args, "t"); has {
			operands = append(operands, v)
		}
		if v := longOptionValue(c.args, "--target-directory"); v != "" {
			operands = append(operands, literalWord(v))
		}
		return "mv", operands, true
	case "chmod", "chown", "chgrp":
		if !flags.has(c.base, "-R") && !flags["--recursive"] {
			return "", nil, false
		}
		if len(operands) > 0 && !flags["--reference"] && !anyArg(opts, func(w word) bool { return strings.HasPrefix(w.text, "--reference") }) {
			operands = operands[1:] // the mode or the owner
		}
		return c.base + " -R", operands, true
	}
	return "", nil, false
}

// checkRecursive refuses a recursive change of anything outside the
// workspace, or of a system directory.
func (s *session) checkRecursive(c *command, dirs []string, known bool) {
	label, operands, ok := recursiveChange(c)
	if !ok {
		return
	}
	why := " (" + groupWhy(groupDestructive) + ")"
	home := os.Getenv("HOME")
	for _, w := range operands {
		if !w.literal {
			s.add(groupDestructive, c.display(), fmt.Sprintf("%s on %s, which is not a literal path, so it could be outside the workspace%s", label, w.src, why))
			continue
		}
		if !known && !strings.HasPrefix(w.text, "/") {
			s.add(groupDestructive, c.display(), fmt.Sprintf("%s on the relative path %s after a cd the policy cannot follow%s", label, w.src, why))
			continue
		}
		for _, d := range dirs {
			abs := resolvePath(d, w.text, home)
			if w.glob {
				abs = path.Dir(abs) // the directory the glob expands in
			}
			switch {
			case systemDirs[abs] || abs == path.Clean(home) && home != "":
				s.add(groupDestructive, c.display(), fmt.Sprintf("%s on %s, a system or home directory%s", label, abs, why))
			case !s.p.insideWorkspace(abs):
				s.add(groupDestructive, c.display(), fmt.Sprintf("%s on %s, which is outside the workspace%s", label, abs, why))
			default:
				continue
			}
			break
		}
	}
}

// insideWorkspace reports whether abs is inside the workspace, following
// the symlinks of the part of it that exists.
func (p *Policy) insideWorkspace(abs string) bool {
	if p.workspace == "" {
		return false
	}
	within := func(ws, x string) bool { return x == ws || strings.HasPrefix(x, strings.TrimSuffix(ws, "/")+"/") }
	if !within(p.workspace, abs) {
		return false
	}
	real := realPath(abs)
	return within(p.workspaceReal, real)
}

// realPath resolves the symlinks of the longest existing prefix of abs.
func realPath(abs string) string {
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == "/" || cur == "." {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}

// cdTargets returns the directories the script's cd, pushd, chdir and env
// -C name, as written (home for a cd alone), and false when one is not
// literal.
func (s *session) cdTargets(home string) ([]string, bool) {
	var targets []string
	known := true
	for _, c := range s.commands {
		switch c.base {
		case "cd", "pushd", "chdir":
			var operands []word
			for _, w := range c.args {
				if !(w.exact() && (w.text == "-P" || w.text == "-L" || w.text == "-e" || w.text == "-@" || w.text == "--" || w.text == "-n")) {
					operands = append(operands, w)
				}
			}
			switch {
			case len(operands) == 0:
				targets = append(targets, home)
			case !operands[0].exact():
				known = false
			case operands[0].text == "-" || strings.HasPrefix(operands[0].text, "+") || strings.HasPrefix(operands[0].text, "-"):
				// Back to, or rotated to, a directory already counted.
			default:
				targets = append(targets, operands[0].text)
			}
		case "env":
			for i, w := range c.args {
				switch {
				case w.exact() && (w.text == "-C" || w.text == "--chdir") && i+1 < len(c.args):
					if v := c.args[i+1]; v.exact() {
						targets = append(targets, v.text)
					} else {
						known = false
					}
				case w.exact() && strings.HasPrefix(w.text, "--chdir="):
					targets = append(targets, strings.TrimPrefix(w.text, "--chdir="))
				case w.exact() && strings.HasPrefix(w.text, "-C") && len(w.text) > 2:
					targets = append(targets, w.text[2:])
				}
			}
		}
	}
	return targets, known
}
