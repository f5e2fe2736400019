package bash

import (
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash, ksh and zsh evaluate the value of a variable used in arithmetic as
// an arithmetic expression, and an array subscript in that expression runs
// command substitutions: after x='a[$(id)]', $((x)) runs id, although no
// command named id appears anywhere. The same happens when such a string is
// used as a variable name (read, printf -v, unset, [[ -v ]], ${!ref}). dash
// does not do this, so these checks apply only to scripts a bash-like shell
// may run.
//
// The check is a small taint analysis: a variable may reach arithmetic only
// if every assignment to it in the script is a literal integer or arithmetic
// itself, or it is one of the shell's own numeric variables.

const ruleArithInjection = "arith_injection"

// bashLikeShell reports whether the named shell evaluates strings this way.
// An sh of unknown identity may be bash.
func bashLikeShell(name string, shMayBeBash bool) bool {
	switch strings.ToLower(name) {
	case "bash", "rbash", "ksh", "ksh93", "mksh", "pdksh", "oksh", "lksh", "zsh":
		return true
	case "sh":
		return shMayBeBash
	}
	return false
}

var (
	integerLiteral = regexp.MustCompile(`^[-+]?(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9a-zA-Z@_]+)?)$`)
	varName        = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// shellNumeric are variables the shell itself keeps numeric.
	shellNumeric = setOf("#", "?", "$", "!", "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID",
		"EUID", "OPTIND", "EPOCHSECONDS")
	// nameTakers are builtins whose operands are variable names.
	nameTakers = setOf("read", "unset", "mapfile", "readarray", "getopts", "printf", "test", "[", "declare", "typeset",
		"local", "export", "readonly", "let")
)

func (a *analysis) checkEvaluatedStrings() {
	assignedInt := map[string]bool{}
	tainted := map[string]bool{}
	note := func(name string, isInt bool) {
		if isInt {
			assignedInt[name] = true
		} else {
			tainted[name] = true
		}
	}
	var refs []syntax.Node // arithmetic expressions to look into
	var values []syntax.Node
	integerAttr := false
	syntax.Walk(a.file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil && !n.Naked {
				v := word{}
				if n.Value != nil {
					v = evalWord(n.Value)
					values = append(values, n.Value)
					a.checkNameText(n, v)
				}
				note(n.Name.Value, n.Array == nil && n.Index == nil && v.exact() && integerLiteral.MatchString(v.text))
			}
			if n.Naked && n.Name == nil && n.Value != nil {
				// declare -i makes later assignments arithmetic.
				if w := evalWord(n.Value); w.exact() && strings.HasPrefix(w.text, "-") && strings.Contains(w.text, "i") {
					integerAttr = true
				}
			}
			if n.Index != nil {
				refs = append(refs, n.Index)
			}
		case *syntax.ForClause:
			if wi, ok := n.Loop.(*syntax.WordIter); ok && wi.Name != nil {
				allInts := true
				for _, it := range wi.Items {
					w := evalWord(it)
					allInts = allInts && w.exact() && integerLiteral.MatchString(w.text)
				}
				note(wi.Name.Value, allInts && len(wi.Items) > 0)
			}
		case *syntax.BinaryArithm:
			if isAssignOp(n.Op) {
				if name, ok := arithName(n.X); ok {
					note(name, true)
				}
			}
		case *syntax.UnaryArithm:
			if name, ok := arithName(n.X); ok && (n.Op == syntax.Inc || n.Op == syntax.Dec) {
				note(name, true)
			}
		case *syntax.CallExpr:
			a.checkNameOperands(n, tainted)
			refs = append(refs, testArithOperands(n)...)
		case *syntax.ArithmExp:
			refs = append(refs, n.X)
		case *syntax.ArithmCmd:
			refs = append(refs, n.X)
		case *syntax.LetClause:
			for _, e := range n.Exprs {
				refs = append(refs, e)
			}
		case *syntax.CStyleLoop:
			refs = append(refs, n.Init, n.Cond, n.Post)
		case *syntax.ParamExp:
			if n.Excl && n.Names == 0 && n.Param != nil && !shellNumeric[n.Param.Value] {
				a.s.add(ruleArithInjection, a.describe(n), "indirect expansion evaluates the value of "+n.Param.Value+" as a variable name, and a subscript in it runs commands the policy cannot see")
			}
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.Contains(evalWord(n.Exp.Word).text, "P") {
				a.s.add(ruleArithInjection, printNode(n), "${var@P} expands the value like a prompt, which runs the command substitutions in it")
			}
			refs = append(refs, n.Index)
			if n.Slice != nil {
				refs = append(refs, n.Slice.Offset, n.Slice.Length)
			}
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				refs = append(refs, n.X, n.Y)
			}
		case *syntax.UnaryTest:
			if w, ok := n.X.(*syntax.Word); ok && n.Op == syntax.TsVarSet {
				if v := evalWord(w); !v.exact() {
					a.s.add(ruleArithInjection, a.describe(n), fmt.Sprintf("-v takes a variable name; %s is computed at run time, and a subscript in it would run commands the policy cannot see", v.src))
				} else {
					a.checkNameText(n, v)
				}
			}
		}
		return true
	})
	if integerAttr {
		refs = append(refs, values...)
	}
	safe := func(name string) bool {
		return shellNumeric[name] || assignedInt[name] && !tainted[name]
	}
	for _, r := range refs {
		if r == nil || isNilNode(r) {
			continue
		}
		syntax.Walk(r, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.Word:
				if _, isName := wordName(n); !isName {
					a.checkNameText(n, evalWord(n))
				}
				if name, ok := wordName(n); ok && !safe(name) {
					a.s.add(ruleArithInjection, a.describe(r), fmt.Sprintf("the shell evaluates the value of %s as an expression, and a subscript in it would run commands the policy cannot see; only variables set to literal integers or by arithmetic may be used here", name))
				}
			case *syntax.ParamExp:
				if n.Param != nil && !safe(n.Param.Value) {
					a.s.add(ruleArithInjection, a.describe(r), fmt.Sprintf("the value of $%s is evaluated as an expression, and a subscript in it would run commands the policy cannot see; only variables set to literal integers or by arithmetic may be used here", n.Param.Value))
				}
				return false
			case *syntax.CmdSubst:
				a.s.add(ruleArithInjection, a.describe(r), "the output of a command substitution is evaluated as an expression, and a subscript in it would run commands the policy cannot see")
				return false
			}
			return true
		})
	}
}

// checkNameText refuses a literal that would run a command substitution if
// the shell took it as a variable name or an arithmetic expression.
func (a *analysis) checkNameText(n syntax.Node, w word) {
	if i := strings.IndexByte(w.text, '['); i >= 0 && (strings.Contains(w.text[i:], "$(") || strings.Contains(w.text[i:], "`")) {
		a.s.add(ruleArithInjection, a.describe(n), fmt.Sprintf("%s holds a subscript with a command substitution, which the shell runs if the text is used as a variable name or in arithmetic", w.src))
	}
}

// testArithOperands returns the operands test and [ compare with -eq and
// friends, which bash evaluates as arithmetic.
func testArithOperands(ce *syntax.CallExpr) []syntax.Node {
	if len(ce.Args) == 0 {
		return nil
	}
	if name := evalWord(ce.Args[0]); !name.exact() || (name.text != "test" && name.text != "[") {
		return nil
	}
	var out []syntax.Node
	for i := 2; i+1 < len(ce.Args); i++ {
		switch evalWord(ce.Args[i]).text {
		case "-eq", "-ne", "-lt", "-le", "-gt", "-ge":
			out = append(out, ce.Args[i-1], ce.Args[i+1])
		}
	}
	return out
}

// checkNameOperands refuses variable names that carry a command
// substitution in a subscript, or that are computed at run time.
func (a *analysis) checkNameOperands(ce *syntax.CallExpr, tainted map[string]bool) {
	if len(ce.Args) == 0 {
		return
	}
	name := evalWord(ce.Args[0])
	if !name.exact() || !nameTakers[name.text] {
		return
	}
	for _, arg := range ce.Args[1:] {
		w := evalWord(arg)
		if w.exact() {
			a.checkNameText(ce, w)
			if varName.MatchString(w.text) && name.text != "test" && name.text != "[" {
				tainted[w.text] = true
			}
			continue
		}
		switch name.text {
		case "read", "unset", "mapfile", "readarray", "getopts", "printf", "test", "[":
			if w.flagSafe || name.text == "printf" && !isPrintfVTarget(ce.Args, arg) {
				continue
			}
			a.s.add(ruleArithInjection, printNode(ce), fmt.Sprintf("%s may be used as a variable name computed at run time, and a subscript in it would run commands the policy cannot see", w.src))
		}
	}
}

func isPrintfVTarget(args []*syntax.Word, arg *syntax.Word) bool {
	for i := 1; i+1 < len(args); i++ {
		if w := evalWord(args[i]); w.exact() && w.text == "-v" && args[i+1] == arg {
			return true
		}
	}
	return false
}

// describe renders n for a message, or the nearest enclosing node the
// printer can render.
func (a *analysis) describe(n syntax.Node) string {
	for m := n; m != nil; m = a.parents[m] {
		if s := printNode(m); s != "?" {
			if len(s) > 120 {
				s = s[:117] + "..."
			}
			return s
		}
	}
	return "the command"
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn, syntax.RemAssgn,
		syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

func arithName(e syntax.ArithmExpr) (string, bool) {
	if w, ok := e.(*syntax.Word); ok {
		return wordName(w)
	}
	return "", false
}

// wordName returns the variable a bare word in arithmetic names.
func wordName(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok || !varName.MatchString(lit.Value) {
		return "", false
	}
	return lit.Value, true
}

// isNilNode catches typed nil interfaces (a CStyleLoop without a Cond).
func isNilNode(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Word:
		return n == nil
	case *syntax.BinaryArithm:
		return n == nil
	case *syntax.UnaryArithm:
		return n == nil
	case *syntax.ParenArithm:
		return n == nil
	}
	return false
}
