package textfile

import (
	"strings"
)

// Line is one line of a file and the ending that followed it: "\n", "\r\n",
// or "" for a last line without a final newline. Keeping each line's own
// ending is what lets an edit leave the lines it did not touch byte for byte
// as they were, even in a file that mixes LF and CRLF.
type Line struct {
	Text string
	End  string
}

// Text is a file's content as lines.
type Text struct {
	Lines []Line
}

// Split cuts s into lines. "" has no lines, "a\n" and "a" have one, "\n" has
// one empty line.
func Split(s string) Text {
	var lines []Line
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, Line{Text: s})
			break
		}
		text, end := s[:i], "\n"
		if strings.HasSuffix(text, "\r") {
			text, end = text[:len(text)-1], "\r\n"
		}
		lines = append(lines, Line{Text: text, End: end})
		s = s[i+1:]
	}
	return Text{Lines: lines}
}

// String puts the lines back together, endings included.
func (t Text) String() string {
	n := 0
	for _, l := range t.Lines {
		n += len(l.Text) + len(l.End)
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range t.Lines {
		b.WriteString(l.Text)
		b.WriteString(l.End)
	}
	return b.String()
}

// Len is the number of lines.
func (t Text) Len() int { return len(t.Lines) }

// EOL is the line ending new lines get: CRLF when the file mostly uses it,
// LF otherwise (and for a file with no line ending yet).
func (t Text) EOL() string {
	crlf, lf := 0, 0
	for _, l := range t.Lines {
		switch l.End {
		case "\r\n":
			crlf++
		case "\n":
			lf++
		}
	}
	if crlf > lf {
		return "\r\n"
	}
	return "\n"
}

// UniformCRLF reports whether every line ending in the file is CRLF. Such a
// file can be edited as LF text and converted back without changing any
// byte the edit did not touch.
func (t Text) UniformCRLF() bool {
	seen := false
	for _, l := range t.Lines {
		switch l.End {
		case "\n":
			return false
		case "\r\n":
			seen = true
		}
	}
	return seen
}

// Replace returns a copy with the lines [from, to) (0-based) replaced by
// repl; from == to inserts. New lines take the file's EOL. Whether the file
// ends with a newline is preserved: when the change reaches the end of the
// file, the new last line takes the old last line's ending.
func (t Text) Replace(from, to int, repl []string) Text {
	n := len(t.Lines)
	eol := t.EOL()
	finalEnd := eol
	if n > 0 {
		finalEnd = t.Lines[n-1].End
	}
	out := make([]Line, 0, n-(to-from)+len(repl))
	out = append(out, t.Lines[:from]...)
	for _, r := range repl {
		out = append(out, Line{Text: r, End: eol})
	}
	out = append(out, t.Lines[to:]...)
	for i := 0; i < len(out)-1; i++ {
		if out[i].End == "" {
			// The old last line had no newline and is no longer last.
			out[i].End = eol
		}
	}
	if to == n && len(out) > 0 {
		out[len(out)-1].End = finalEnd
	}
	return Text{Lines: out}
}

// ContentLines splits text the model supplied into lines for Replace. Its
// line endings are normalised (the file's own EOL is applied on write) and
// one trailing newline is dropped, so "x" and "x\n" both mean the single
// line "x", and "" means one empty line.
func ContentLines(content string) []string {
	content = strings.ReplaceAll(content, "\r\n", "\n")
	content = strings.TrimSuffix(content, "\n")
	return strings.Split(content, "\n")
}

// DetectEOL is Split(s).EOL() without splitting: CRLF when most line
// endings in s are CRLF, LF otherwise.
func DetectEOL(s string) string {
	crlf := strings.Count(s, "\r\n")
	if crlf > strings.Count(s, "\n")-crlf {
		return "\r\n"
	}
	return "\n"
}
