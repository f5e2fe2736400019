package bash

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one shell word as the policy sees it: the value a program would
// receive after quote removal, when that value can be known before the script
// runs.
//
// The policy never guesses what an expansion produces. A word with a
// parameter expansion, a command substitution, arithmetic, a brace expansion
// or an ANSI-C escape is not literal, and rules that depend on it either
// refuse or look only at what cannot change.
type word struct {
	// text is the value after quote removal. For a word that is not literal
	// it holds the literal fragments only, with expansions left out; rules
	// use it for conservative heuristics, never as the real value.
	text string
	// literal is true when text is exactly what the program receives (glob
	// expansion aside, see glob).
	literal bool
	// glob is true when the word holds an unquoted *, ? or [...]: the shell
	// may replace it with any matching file names, including ones the model
	// created, such as a file named -rf.
	glob bool
	// flagSafe is true when no field the word expands to can start with '-':
	// it starts with known text that is not '-' and nothing in it is subject
	// to word splitting.
	flagSafe bool
	// prefix is the known text before the first expansion (all of text for
	// a literal word).
	prefix string
	// src is the word as written, for messages.
	src string
	// node is the parsed word; nil for words the policy made up, such as
	// the arguments xargs reads from its input.
	node *syntax.Word
}

// unknownWord stands for arguments that only exist at run time, such as the
// lines xargs reads or the file names find substitutes for {}.
func unknownWord(src string, flagSafe bool) word {
	return word{src: src, flagSafe: flagSafe}
}

// literalWord is a word made from a string the policy already knows, such as
// the words of an env -S string.
func literalWord(s string) word {
	return word{text: s, prefix: s, literal: true, flagSafe: !strings.HasPrefix(s, "-"), src: shellQuote(s)}
}

// evalWord computes what the policy can know about w.
func evalWord(w *syntax.Word) word {
	out := word{literal: true, node: w, src: printNode(w)}
	var text strings.Builder
	// known is true while every character so far is known text; first is
	// the first known character, which decides whether a flag can appear.
	known, firstSeen, splits := true, false, false
	var first byte
	note := func(s string) {
		if s == "" {
			return
		}
		if known && !firstSeen {
			first, firstSeen = s[0], true
		}
		text.WriteString(s)
	}
	unknown := func(splitting bool) {
		if out.literal {
			out.prefix = text.String()
		}
		out.literal = false
		if !firstSeen {
			known = false
		}
		if splitting {
			splits = true
		}
	}
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, glob, leadingGlob := unescapeUnquoted(p.Value)
			if glob {
				out.glob = true
			}
			if leadingGlob && !firstSeen {
				// A leading glob can expand to a name such as -rf.
				known = false
			}
			note(s)
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				// $'...' escapes are decoded by bash but not by every
				// shell; rather than guess, the word is not literal.
				unknown(false)
				continue
			}
			note(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					note(unescapeDouble(lit.Value))
					continue
				}
				// Quoted expansions do not split, so they cannot add a field.
				unknown(false)
			}
		case *syntax.ProcSubst:
			// <(cmd) becomes a path such as /dev/fd/63: one field, never
			// an option.
			if !firstSeen && known {
				note("/dev/fd/")
			}
			unknown(false)
		default:
			// Parameter expansions, substitutions, arithmetic and extended
			// globs outside double quotes are split into fields.
			unknown(true)
		}
	}
	out.text = text.String()
	if out.literal {
		out.prefix = out.text
	}
	if hasBraceExpansion(w) {
		// {a,b} becomes several words; the policy does not expand it.
		out.literal = false
		splits = true
		out.prefix = ""
	}
	if out.literal && !out.glob {
		out.flagSafe = !strings.HasPrefix(out.text, "-")
	} else {
		out.flagSafe = known && firstSeen && first != '-' && !splits
	}
	return out
}

// exact reports whether the word's value is fully known: literal, and not
// subject to file name expansion.
func (w word) exact() bool { return w.literal && !w.glob }

// unescapeUnquoted removes the backslashes the shell removes outside quotes.
// It reports whether an unescaped glob character remains, and whether the
// result starts with one.
func unescapeUnquoted(s string) (out string, glob, leadingGlob bool) {
	if !strings.ContainsAny(s, `\*?[`) {
		return s, false, false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		isGlob := c == '*' || c == '?' ||
			// A lone [ (the test command) is not a pattern.
			(c == '[' && strings.IndexByte(s[i+1:], ']') >= 0)
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case isGlob:
			if b.Len() == 0 {
				leadingGlob = true
			}
			glob = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), glob, leadingGlob
}

// unescapeDouble removes the backslashes the shell removes inside double
// quotes: only before $, `, ", \ and a newline.
func unescapeDouble(s string) string { return unescapeBefore(s, "$`\"\\") }

// unescapeHeredoc removes the backslashes the shell removes in the body of
// an unquoted here-document, where \" keeps its backslash.
func unescapeHeredoc(s string) string { return unescapeBefore(s, "$`\\") }

func unescapeBefore(s, special string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch {
			case strings.IndexByte(special, s[i+1]) >= 0:
				i++
				b.WriteByte(s[i])
				continue
			case s[i+1] == '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// hasBraceExpansion reports whether bash would expand braces in w. The
// check runs on a copy because SplitBraces rewrites the word it is given.
func hasBraceExpansion(w *syntax.Word) bool {
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return false
	}
	return slices.ContainsFunc(cp.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.BraceExp)
		return ok
	})
}

// printNode renders a node as shell source, for messages.
func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, n); err != nil {
		return "?"
	}
	return b.String()
}

// shellQuote quotes s so that a shell reads it back as one literal word.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' || r == '@' ||
			('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9'))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
