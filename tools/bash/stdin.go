package bash

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shells and interpreters that read their program from standard input run
// whatever arrives there. The policy follows standard input back to where it
// comes from: a here-document it can parse, a pipe whose writers it can name,
// or something it cannot know.

type stdinKind int

const (
	// stdinEmpty: the tool gives commands no input (and xargs gives the
	// commands it starts /dev/null).
	stdinEmpty stdinKind = iota
	// stdinPipe: the output of other commands, named by upstream.
	stdinPipe
	// stdinText: a here-document or here-string known before running.
	stdinText
	// stdinFile: a file named by a redirect.
	stdinFile
	// stdinUnknown: a descriptor, expanded text, or the caller of a
	// function.
	stdinUnknown
)

type stdinSource struct {
	kind stdinKind
	text string
	// upstream are the nodes whose commands write into the pipe, and an
	// the analysis they belong to.
	upstream []syntax.Node
	an       *analysis
	desc     string
}

// stdinOf works out where c's standard input comes from.
func (a *analysis) stdinOf(c *command) stdinSource {
	if c.stdinNull {
		return stdinSource{kind: stdinEmpty}
	}
	if c.stmt == nil {
		return a.stdin
	}
	var cur syntax.Node = c.stmt
	for {
		if st, ok := cur.(*syntax.Stmt); ok {
			if st.Coprocess {
				return stdinSource{kind: stdinUnknown, desc: "a coprocess"}
			}
			if r := lastStdinRedirect(st.Redirs); r != nil {
				return a.fromRedirect(r)
			}
		}
		parent := a.parents[cur]
		switch p := parent.(type) {
		case nil:
			return a.stdin
		case *syntax.BinaryCmd:
			if (p.Op == syntax.Pipe || p.Op == syntax.PipeAll) && p.Y == cur {
				return stdinSource{kind: stdinPipe, upstream: []syntax.Node{p.X}, an: a, desc: "a pipe"}
			}
		case *syntax.ProcSubst:
			if p.Op == syntax.CmdOut {
				// >(cmd) reads what the command around it writes.
				return stdinSource{kind: stdinPipe, upstream: []syntax.Node{a.enclosingStmt(p)}, an: a, desc: "a process substitution"}
			}
		case *syntax.FuncDecl:
			return stdinSource{kind: stdinUnknown, desc: "the input of whoever calls the function"}
		case *syntax.CoprocClause:
			return stdinSource{kind: stdinUnknown, desc: "a coprocess"}
		}
		cur = parent
	}
}

func (a *analysis) enclosingStmt(n syntax.Node) syntax.Node {
	for p := a.parents[n]; p != nil; p = a.parents[p] {
		if st, ok := p.(*syntax.Stmt); ok {
			return st
		}
	}
	return a.file
}

// lastStdinRedirect returns the redirect that decides fd 0, if any.
func lastStdinRedirect(rs []*syntax.Redirect) *syntax.Redirect {
	var last *syntax.Redirect
	for _, r := range rs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			last = r
		}
	}
	return last
}

func (a *analysis) fromRedirect(r *syntax.Redirect) stdinSource {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		if text, ok := heredocText(r); ok {
			return stdinSource{kind: stdinText, text: text, desc: "a here-document"}
		}
		return stdinSource{kind: stdinUnknown, desc: "a here-document with expansions"}
	case syntax.WordHdoc:
		if w := evalWord(r.Word); w.literal {
			return stdinSource{kind: stdinText, text: w.text + "\n", desc: "a here-string"}
		}
		return stdinSource{kind: stdinUnknown, desc: "a here-string with expansions"}
	case syntax.DplIn:
		return stdinSource{kind: stdinUnknown, desc: "a duplicated file descriptor"}
	}
	var subst []syntax.Node
	syntax.Walk(r.Word, func(n syntax.Node) bool {
		if ps, ok := n.(*syntax.ProcSubst); ok {
			subst = append(subst, ps)
			return false
		}
		return true
	})
	if len(subst) > 0 {
		return stdinSource{kind: stdinPipe, upstream: subst, an: a, desc: "a process substitution"}
	}
	w := evalWord(r.Word)
	if w.exact() {
		return stdinSource{kind: stdinFile, text: w.text, desc: "the file " + w.src}
	}
	return stdinSource{kind: stdinFile, desc: "a file"}
}

// heredocText returns the body of a here-document as the shell delivers it,
// when it holds no expansions.
func heredocText(r *syntax.Redirect) (string, bool) {
	if r.Hdoc == nil {
		return "", true
	}
	quoted := r.Word != nil && !(len(r.Word.Parts) == 1 && isPlainLit(r.Word.Parts[0]))
	var b strings.Builder
	for _, p := range r.Hdoc.Parts {
		lit, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		if quoted {
			b.WriteString(lit.Value)
		} else {
			b.WriteString(unescapeHeredoc(lit.Value))
		}
	}
	text := b.String()
	if r.Op == syntax.DashHdoc {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimLeft(l, "\t")
		}
		text = strings.Join(lines, "\n")
	}
	return text, true
}

func isPlainLit(p syntax.WordPart) bool {
	lit, ok := p.(*syntax.Lit)
	return ok && !strings.Contains(lit.Value, `\`)
}

// stdinPaths name a process's own standard input.
var stdinPaths = setOf("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")

// namesDescriptor reports whether a path names another open descriptor,
// whose content the policy cannot know.
func namesDescriptor(p string) bool {
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/") || strings.HasPrefix(p, "/proc/thread-self/fd/")
}
