package bash

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// isFileRedirect reports whether the redirect's word names a file.
func isFileRedirect(r *syntax.Redirect, w word) bool {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return false
	case syntax.DplIn, syntax.DplOut:
		// >&2 and <&- are descriptors; bash's >&file is a file.
		return !(w.exact() && (w.text == "-" || isDigits(w.text)))
	}
	return true
}

func isDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0
}

func isOutputRedirect(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrIn, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return false
	}
	return true
}

// checkRedirect applies the rules about redirect targets.
func (a *analysis) checkRedirect(r *syntax.Redirect) {
	if r.Word == nil {
		return
	}
	w := evalWord(r.Word)
	if !isFileRedirect(r, w) {
		return
	}
	p := a.s.p
	subject := printRedirect(r)
	if p.enabled(groupReverseShell) {
		switch {
		case strings.Contains(path.Clean(w.text), "/dev/tcp") || strings.Contains(path.Clean(w.text), "/dev/udp"):
			a.s.add(groupReverseShell, subject, "bash opens a network connection for /dev/tcp and /dev/udp paths ("+groupWhy(groupReverseShell)+")")
		case !w.literal && (strings.HasPrefix("/dev/tcp/", w.prefix) || strings.HasPrefix("/dev/udp/", w.prefix) || strings.HasPrefix(w.prefix, "/dev/")):
			a.s.add(groupReverseShell, subject, "the redirect target is not a literal path, so it could be /dev/tcp/..., a network connection; start it with literal text such as ./")
		}
	}
	if w.exact() && namesRawDisk(w.text) {
		if isOutputRedirect(r.Op) && p.enabled(groupDestructive) {
			a.s.add(groupDestructive, subject, "writes to a raw disk device ("+groupWhy(groupDestructive)+")")
		}
		if !isOutputRedirect(r.Op) && p.enabled(groupDisk) {
			a.s.add(groupDisk, subject, "reads a raw disk device ("+groupWhy(groupDisk)+")")
		}
	}
	if p.enabled(groupEnvRead) && namesEnviron(w) {
		a.s.add(groupEnvRead, subject, "names a process environment file ("+groupWhy(groupEnvRead)+")")
	}
	if p.enabled(groupPower) && w.exact() && namesSysrq(w.text) {
		a.s.add(groupPower, subject, "writing to /proc/sysrq-trigger can reboot or crash the machine ("+groupWhy(groupPower)+")")
	}
	if len(p.denyArgs) > 0 {
		a.s.pathUses = append(a.s.pathUses, pathUse{subject: subject, w: w})
	}
	if len(p.serverPaths) > 0 {
		a.s.serverUses = append(a.s.serverUses, pathUse{subject: subject, w: w, write: isOutputRedirect(r.Op)})
	}
}

// printRedirect renders a redirect for messages (the printer cannot print a
// redirect on its own).
func printRedirect(r *syntax.Redirect) string {
	s := ""
	if r.N != nil {
		s = r.N.Value
	}
	return s + r.Op.String() + " " + printNode(r.Word)
}
