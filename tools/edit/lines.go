package edit

import (
	"fmt"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/textfile"
)

// lineRange checks line_from..line_to (line_to defaulting to line_from)
// against a text of n lines and returns it 0-based, half-open.
func lineRange(a Args, n int) (int, int, error) {
	from, to := a.LineFrom, a.LineTo
	if to == 0 {
		to = from
	}
	switch {
	case from < 1:
		return 0, 0, tools.Errorf(tools.ErrInvalidArgs, "line_from is required and lines count from 1 (got %d)", a.LineFrom)
	case to < from:
		return 0, 0, tools.Errorf(tools.ErrInvalidArgs, "line_to %d is before line_from %d", to, from)
	case n == 0:
		return 0, 0, tools.Errorf(tools.ErrInvalidArgs, "the file is empty; use operation insert with after_line 0 to add lines")
	case from > n:
		return 0, 0, tools.Errorf(tools.ErrInvalidArgs, "line_from %d is past the end; the file has %d lines", from, n)
	case to > n:
		return 0, 0, tools.Errorf(tools.ErrInvalidArgs, "line_to %d is past the end; the file has %d lines", to, n)
	}
	return from - 1, to, nil
}

func describeRange(from, to int) string {
	if to == from+1 {
		return fmt.Sprintf("line %d", to)
	}
	return fmt.Sprintf("lines %d-%d", from+1, to)
}

func linesWord(n int) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

// replaceLines is operation line.
func replaceLines(t textfile.Text, a Args) (change, error) {
	if a.Content == nil {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "content is required for operation line (use operation delete to remove lines)")
	}
	from, to, err := lineRange(a, t.Len())
	if err != nil {
		return change{}, err
	}
	repl := textfile.ContentLines(*a.Content)
	return change{
		text:    t.Replace(from, to, repl).String(),
		summary: fmt.Sprintf("replaced %s with %s", describeRange(from, to), linesWord(len(repl))),
	}, nil
}

// deleteLines is operation delete.
func deleteLines(t textfile.Text, a Args) (change, error) {
	from, to, err := lineRange(a, t.Len())
	if err != nil {
		return change{}, err
	}
	return change{
		text:    t.Replace(from, to, nil).String(),
		summary: "deleted " + describeRange(from, to),
	}, nil
}

// insertLines is operation insert: the content becomes whole new lines
// before or after an anchor, which is a line number or a text that must
// occur exactly once.
func insertLines(old string, a Args) (change, error) {
	if a.Content == nil {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "content is required for operation insert")
	}
	anchors := 0
	for _, set := range []bool{a.Before != "", a.After != "", a.BeforeLine != nil, a.AfterLine != nil} {
		if set {
			anchors++
		}
	}
	if anchors != 1 {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "insert needs exactly one of before, after, before_line or after_line (got %d)", anchors)
	}
	t := textfile.Split(old)
	n := t.Len()
	var at int // index of the line the content goes before
	var where string
	switch {
	case a.AfterLine != nil:
		if *a.AfterLine < 0 || *a.AfterLine > n {
			return change{}, tools.Errorf(tools.ErrInvalidArgs, "after_line must be between 0 (the top) and %d (the end), got %d", n, *a.AfterLine)
		}
		at, where = *a.AfterLine, fmt.Sprintf("after line %d", *a.AfterLine)
	case a.BeforeLine != nil:
		if *a.BeforeLine < 1 || *a.BeforeLine > n+1 {
			return change{}, tools.Errorf(tools.ErrInvalidArgs, "before_line must be between 1 and %d (the end), got %d", n+1, *a.BeforeLine)
		}
		at, where = *a.BeforeLine-1, fmt.Sprintf("before line %d", *a.BeforeLine)
	default:
		anchor, after := a.Before, false
		if a.After != "" {
			anchor, after = a.After, true
		}
		m, err := newMatcher(old, anchor, a.UseRegex)
		if err != nil {
			return change{}, err
		}
		match, err := m.unique(anchorName(after))
		if err != nil {
			return change{}, err
		}
		start, end := match[0], match[1]
		if after {
			// The line holding the match's last character; a match that
			// ends with a newline ends on the line before it.
			at = m.lineOf(max(end-1, start)) + 1
			where = fmt.Sprintf("after line %d", at)
		} else {
			at = m.lineOf(start)
			where = fmt.Sprintf("before line %d", at+1)
		}
	}
	repl := textfile.ContentLines(*a.Content)
	return change{
		text:    t.Replace(at, at, repl).String(),
		summary: fmt.Sprintf("inserted %s %s", linesWord(len(repl)), where),
	}, nil
}

func anchorName(after bool) string {
	if after {
		return "after"
	}
	return "before"
}
