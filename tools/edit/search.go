package edit

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// maxRegexMatches bounds a global regex replacement. A pattern such as "."
// matches every byte of a large file, and each match costs memory; past this
// many the model is asked for a narrower pattern.
const maxRegexMatches = 100_000

// matcher finds a literal text or a regular expression in a file's content.
// In a file whose line endings are all CRLF it searches an LF copy, with the
// pattern normalised the same way, so a model's "\n" matches the file's
// "\r\n"; restore converts the result back.
type matcher struct {
	work string // the content searched
	crlf bool
	re   *regexp.Regexp // nil for a literal
	lit  string
	desc string // "text" or "regex"
}

func newMatcher(content, pattern string, useRegex bool) (*matcher, error) {
	m := &matcher{work: content, desc: "text"}
	if n := strings.Count(content, "\r\n"); n > 0 && n == strings.Count(content, "\n") {
		m.crlf = true
		m.work = strings.ReplaceAll(content, "\r\n", "\n")
		pattern = strings.ReplaceAll(pattern, "\r\n", "\n")
	}
	if !useRegex {
		m.lit = pattern
		return m, nil
	}
	m.desc = "regex"
	if len(pattern) > maxRegexLen {
		return nil, tools.Errorf(tools.ErrInvalidArgs, "the regular expression is %d characters long; the limit is %d", len(pattern), maxRegexLen)
	}
	// Multi-line mode: ^ and $ match at every line, as in a line-oriented
	// editor and as in read's search.
	re, err := regexp.Compile("(?m)" + pattern)
	if err != nil {
		return nil, tools.Wrap(tools.ErrInvalidArgs, err, "not a valid Go (RE2) regular expression")
	}
	m.re = re
	return m, nil
}

// find returns up to limit matches (limit < 0: all) as submatch index
// lists, the first pair being the whole match.
func (m *matcher) find(limit int) [][]int {
	if m.re != nil {
		return m.re.FindAllStringSubmatchIndex(m.work, limit)
	}
	var out [][]int
	for off := 0; limit < 0 || len(out) < limit; {
		i := strings.Index(m.work[off:], m.lit)
		if i < 0 {
			break
		}
		start := off + i
		out = append(out, []int{start, start + len(m.lit)})
		off = start + max(len(m.lit), 1)
		if off > len(m.work) {
			break
		}
	}
	return out
}

// unique returns the one match (as find does), or explains why there is
// not exactly one. role names the argument for the message ("search").
func (m *matcher) unique(role string) ([]int, error) {
	ms := m.find(11)
	switch len(ms) {
	case 0:
		return nil, m.noMatch(role)
	case 1:
		return ms[0], nil
	}
	return nil, m.notUnique(role, ms)
}

func (m *matcher) notUnique(role string, ms [][]int) error {
	lines := make([]string, 0, 10)
	for _, mt := range ms[:min(len(ms), 10)] {
		lines = append(lines, fmt.Sprint(m.lineOf(mt[0])+1))
	}
	count := fmt.Sprintf("%d times", len(ms))
	if len(ms) > 10 {
		count = "more than 10 times"
		lines = append(lines, "…")
	}
	hint := "include more surrounding text to make it unique"
	if role == "search" {
		hint += ", or set global: true to replace every occurrence"
	}
	return tools.Errorf(tools.ErrInvalidArgs, "the %s %s occurs %s (lines %s), but must occur once; %s",
		role, m.desc, count, strings.Join(lines, ", "), hint)
}

func (m *matcher) noMatch(role string) error {
	if m.re != nil {
		return tools.Errorf(tools.ErrInvalidArgs, "the %s %s was not found%s", role, m.desc, closestHint(m.work, literalPart(m.re.String()), false))
	}
	return tools.Errorf(tools.ErrInvalidArgs, "the %s %s was not found%s", role, m.desc, closestHint(m.work, m.lit, true))
}

// lineOf is the 0-based line holding byte offset off.
func (m *matcher) lineOf(off int) int {
	return strings.Count(m.work[:off], "\n")
}

// toFile converts text built from m.work back to the file's line endings.
func (m *matcher) toFile(s string) string {
	if m.crlf {
		return strings.ReplaceAll(s, "\n", "\r\n")
	}
	return s
}

// searchReplace is operation search.
func searchReplace(old string, a Args) (change, error) {
	if a.Search == "" {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "search is required for operation search")
	}
	if a.Replace == nil {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "replace is required for operation search (use \"\" to delete the matched text)")
	}
	if *a.Replace == a.Search {
		return change{}, tools.Errorf(tools.ErrInvalidArgs, "search and replace are identical; the edit would change nothing")
	}
	m, err := newMatcher(old, a.Search, a.UseRegex)
	if err != nil {
		return change{}, err
	}
	repl := *a.Replace
	if m.crlf {
		repl = strings.ReplaceAll(repl, "\r\n", "\n")
	}
	var ms [][]int
	if a.Global {
		ms = m.find(maxRegexMatches + 1)
		if len(ms) == 0 {
			return change{}, m.noMatch("search")
		}
		if len(ms) > maxRegexMatches {
			return change{}, tools.Errorf(tools.ErrInvalidArgs, "the search %s matches more than %d times; use a narrower one", m.desc, maxRegexMatches)
		}
	} else {
		match, err := m.unique("search")
		if err != nil {
			return change{}, err
		}
		ms = [][]int{match}
	}
	var b strings.Builder
	b.Grow(len(m.work))
	last := 0
	for _, mt := range ms {
		b.WriteString(m.work[last:mt[0]])
		if m.re != nil {
			b.Write(m.re.ExpandString(nil, repl, m.work, mt))
		} else {
			b.WriteString(repl)
		}
		last = mt[1]
	}
	b.WriteString(m.work[last:])
	summary := "replaced 1 occurrence"
	if len(ms) != 1 {
		summary = fmt.Sprintf("replaced %d occurrences", len(ms))
	}
	return change{text: m.toFile(b.String()), summary: summary}, nil
}
