package bash

import (
	"mvdan.cc/sh/v3/syntax"
)

// Shell functions. In allow mode a word that calls a function the script
// defines is not a program, so it need not be on the allow list. That is
// only safe when the function is certainly defined when the word runs:
// `id(){ :; }` inside `if false`, a subshell, a background job or a
// pipeline defines nothing for the caller, and `unset -f id` removes a
// definition, and then the word runs the program of that name. So a word
// counts as a function call only when a plain statement defining it comes
// earlier in a statement list that also holds the call, and nothing in
// the check unsets it; otherwise the word is judged as the program.

// funcIndex records, per statement list, the functions its plain
// statements define, and the names the scripts unset.
type funcIndex struct {
	// defs maps a statement to the function names it defines, for
	// statements whose command is a function declaration that runs in the
	// current shell.
	defs map[*syntax.Stmt]string
	// lists maps a statement to the list it belongs to.
	lists map[*syntax.Stmt][]*syntax.Stmt
}

func newFuncIndex() funcIndex {
	return funcIndex{defs: map[*syntax.Stmt]string{}, lists: map[*syntax.Stmt][]*syntax.Stmt{}}
}

// indexLists records the statement lists of the tree rooted at n.
func (fi funcIndex) indexLists(n syntax.Node) {
	record := func(list []*syntax.Stmt) {
		for _, st := range list {
			fi.lists[st] = list
			if fd, ok := st.Cmd.(*syntax.FuncDecl); ok && fd.Name != nil && !st.Background && !st.Coprocess && !st.Negated {
				fi.defs[st] = fd.Name.Value
			}
		}
	}
	syntax.Walk(n, func(m syntax.Node) bool {
		switch m := m.(type) {
		case *syntax.File:
			record(m.Stmts)
		case *syntax.Block:
			record(m.Stmts)
		case *syntax.Subshell:
			record(m.Stmts)
		case *syntax.CmdSubst:
			record(m.Stmts)
		case *syntax.ProcSubst:
			record(m.Stmts)
		case *syntax.IfClause:
			record(m.Cond)
			record(m.Then)
		case *syntax.WhileClause:
			record(m.Cond)
			record(m.Do)
		case *syntax.ForClause:
			record(m.Do)
		case *syntax.CaseItem:
			record(m.Stmts)
		}
		return true
	})
}

// recordUnsets notes every name an unset command in the tree may remove;
// an unset whose operands are not literal may remove any function.
func (s *session) recordUnsets(n syntax.Node) {
	syntax.Walk(n, func(m syntax.Node) bool {
		ce, ok := m.(*syntax.CallExpr)
		if !ok || len(ce.Args) == 0 {
			return true
		}
		if name := evalWord(ce.Args[0]); !name.exact() || name.text != "unset" {
			return true
		}
		for _, w := range wordsFromNodes(ce.Args[1:]) {
			switch {
			case !w.exact():
				s.unsetAny = true
			case len(w.text) > 0 && w.text[0] != '-':
				s.unset[w.text] = true
			}
		}
		return true
	})
}

// isFunctionCall reports whether c certainly calls a function the script
// defined before the call (see the comment at the top of this file).
func (a *analysis) isFunctionCall(c *command) bool {
	if len(c.via) > len(a.via) || c.name.node == nil || c.stmt == nil {
		return false
	}
	name := c.name.text
	if a.s.unsetAny || a.s.unset[name] {
		return false
	}
	for n := syntax.Node(c.stmt); n != nil; n = a.parents[n] {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			continue
		}
		for _, prev := range a.funcs.lists[st] {
			if prev == st {
				break
			}
			if a.funcs.defs[prev] == name {
				return true
			}
		}
	}
	return false
}
