package mcptool

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"mvdan.cc/sh/v3/shell"
	"mvdan.cc/sh/v3/syntax"
)

// splitCommandLine splits a "stdio:" command line into words the way a POSIX
// shell would (quotes, backslashes, a leading ~), without running a shell.
//
// Anything a shell would evaluate is refused rather than dropped: a
// $VARIABLE, $(command), redirect, pipe or second command in the line would
// otherwise be silently lost, and a variable expanded from this process's
// environment could carry one of its secrets into the server's arguments.
// Values for the server belong in env.
func splitCommandLine(line string) ([]string, error) {
	if strings.TrimSpace(line) == "" {
		return nil, errors.New(`the "stdio:" line names no command`)
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(line), "")
	if err != nil {
		return nil, fmt.Errorf("cannot split the command line: %w", err)
	}
	if len(f.Stmts) != 1 {
		return nil, errors.New(`the "stdio:" line must hold exactly one command`)
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, errors.New(`the "stdio:" line must be one plain command with arguments: no pipes, redirects, operators or VAR=value prefixes (use env for variables)`)
	}
	for _, w := range call.Args {
		if err := literalWord(w); err != nil {
			return nil, err
		}
	}
	// Only ~ is expanded, from this process's HOME: literalWord has
	// refused every other expansion.
	words, err := shell.Fields(line, func(name string) string {
		if name == "HOME" {
			return os.Getenv("HOME")
		}
		return ""
	})
	if err != nil {
		return nil, fmt.Errorf("cannot split the command line: %w", err)
	}
	if len(words) == 0 || words[0] == "" {
		return nil, errors.New(`the "stdio:" line names no command`)
	}
	return words, nil
}

// literalWord refuses a word whose value a shell would compute.
func literalWord(w *syntax.Word) error {
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, inner := range p.Parts {
				if _, ok := inner.(*syntax.Lit); !ok {
					return expansionError(w)
				}
			}
		default:
			return expansionError(w)
		}
	}
	return nil
}

func expansionError(w *syntax.Word) error {
	var b strings.Builder
	_ = syntax.NewPrinter().Print(&b, w)
	return fmt.Errorf(`%s: the "stdio:" line is not run by a shell, so it cannot expand variables or substitute commands; put values for the server in env, or quote the word with '' to pass it as it is`, b.String())
}
