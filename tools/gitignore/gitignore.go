// Package gitignore matches paths against .gitignore rules, with git's
// semantics (gitignore(5)): comments and escapes, negation, directory-only
// patterns, anchoring, *, ?, [...] and ** wildcards, trailing spaces, and
// nested .gitignore files that apply to their own directory, the last
// matching rule winning.
//
// Paths are slash-separated and relative to the root of the tree the rules
// were read from. Matching is case-sensitive, as git is by default.
package gitignore

import (
	"path"
	"regexp"
	"strings"
)

// Matcher holds the rules of one or more .gitignore files. It is immutable,
// and so safe for concurrent use; a nil *Matcher has no rules.
type Matcher struct {
	rules []rule
}

type rule struct {
	base    string // directory of the .gitignore file; "" is the root
	negate  bool   // "!pattern" re-includes
	dirOnly bool   // "pattern/" matches directories only
	// anchored patterns (with a slash at the start or middle) match the
	// path relative to base; others match the last path component only.
	anchored bool
	match    func(string) bool
}

// Add returns a matcher with the rules of a .gitignore file found in
// directory dir appended to m's. m itself is unchanged. Invalid patterns
// (an unclosed bracket git would not match either) are dropped.
func (m *Matcher) Add(dir string, content []byte) *Matcher {
	base := path.Clean(strings.TrimPrefix(dir, "/"))
	if base == "." {
		base = ""
	}
	var added []rule
	for line := range strings.Lines(string(content)) {
		if r, ok := parseLine(line, base); ok {
			added = append(added, r)
		}
	}
	if len(added) == 0 && m != nil {
		return m
	}
	out := &Matcher{}
	if m != nil {
		out.rules = make([]rule, 0, len(m.rules)+len(added))
		out.rules = append(out.rules, m.rules...)
	}
	out.rules = append(out.rules, added...)
	return out
}

// Match reports whether the rules ignore p, looking at p alone. isDir says
// whether p is a directory. Walks that do not descend into ignored
// directories need nothing more; otherwise use Ignored.
func (m *Matcher) Match(p string, isDir bool) bool {
	if m == nil {
		return false
	}
	for i := len(m.rules) - 1; i >= 0; i-- {
		r := &m.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		rel := p
		if r.base != "" {
			if !strings.HasPrefix(p, r.base+"/") {
				continue
			}
			rel = p[len(r.base)+1:]
		}
		if !r.anchored {
			rel = rel[strings.LastIndexByte(rel, '/')+1:]
		}
		if r.match(rel) {
			return !r.negate
		}
	}
	return false
}

// Ignored reports whether p is ignored, either by the rules or because one
// of its parent directories is: git cannot re-include a file whose
// directory is excluded.
func (m *Matcher) Ignored(p string, isDir bool) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && m.Match(p[:i], true) {
			return true
		}
	}
	return m.Match(p, isDir)
}

// parseLine turns one line of a .gitignore file into a rule.
func parseLine(line, base string) (rule, bool) {
	line = strings.TrimRight(line, "\r\n")
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return rule{}, false
	}
	r := rule{base: base}
	if line[0] == '!' {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	if line == "" {
		return rule{}, false
	}
	var ok bool
	if r.match, ok = compile(line); !ok {
		return rule{}, false
	}
	return r, true
}

// trimTrailingSpaces drops trailing spaces unless escaped ("foo\ ").
func trimTrailingSpaces(s string) string {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		if len(s) >= 2 && s[len(s)-2] == '\\' {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// compile returns a matcher for a pattern whose anchoring has been decided.
// Plain names and "*.ext" compare strings; everything else becomes an RE2
// expression, which matches in linear time whatever the pattern.
func compile(pat string) (func(string) bool, bool) {
	if !strings.ContainsAny(pat, `*?[\`) {
		return func(s string) bool { return s == pat }, true
	}
	if ext := pat[1:]; pat[0] == '*' && !strings.ContainsAny(ext, `*?[\/`) {
		return func(s string) bool { return strings.HasSuffix(s, ext) }, true
	}
	expr, ok := translate(pat)
	if !ok {
		return nil, false
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, false
	}
	return re.MatchString, true
}

// translate turns a gitignore pattern into an anchored regular expression.
// "**" is special only as a whole path component: leading "**/" matches in
// every directory, a trailing "/**" everything inside, and "/**/" zero or
// more directories.
func translate(pat string) (string, bool) {
	var b strings.Builder
	b.WriteString("^")
	segs := strings.Split(pat, "/")
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "**" {
			if last {
				// After "abc/", anything; "abc" itself lacks the slash.
				b.WriteString(".*")
			} else {
				b.WriteString("(?:.*/)?")
			}
			continue
		}
		if !translateSegment(&b, seg) {
			return "", false
		}
		if !last {
			b.WriteString("/")
		}
	}
	b.WriteString("$")
	return b.String(), true
}

// translateSegment writes one path component's wildcards as RE2.
func translateSegment(b *strings.Builder, seg string) bool {
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; c {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '\\':
			if i+1 < len(seg) {
				i++
				b.WriteString(regexp.QuoteMeta(seg[i : i+1]))
			}
		case '[':
			end, ok := translateClass(b, seg, i)
			if !ok {
				return false
			}
			i = end
		default:
			b.WriteString(regexp.QuoteMeta(seg[i : i+1]))
		}
	}
	return true
}

// translateClass writes the bracket expression starting at seg[start] and
// returns the index of its closing bracket. "[!...]" and "[^...]" negate, a
// "]" first in the set is literal, and POSIX classes such as [:alpha:] are
// kept (RE2 knows them). An unclosed bracket makes the pattern invalid.
func translateClass(b *strings.Builder, seg string, start int) (int, bool) {
	i := start + 1
	var out strings.Builder
	out.WriteString("[")
	if i < len(seg) && (seg[i] == '!' || seg[i] == '^') {
		out.WriteString("^")
		i++
	}
	first := true
	for ; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c == ']' && !first:
			out.WriteString("]")
			b.WriteString(out.String())
			return i, true
		case c == '[' && i+1 < len(seg) && seg[i+1] == ':':
			end := strings.Index(seg[i:], ":]")
			if end < 0 {
				return 0, false
			}
			out.WriteString(seg[i : i+end+2])
			i += end + 1
		case c == '\\' && i+1 < len(seg):
			i++
			out.WriteString(classLiteral(seg[i]))
		case c == '\\' || c == '[' || c == ']' || c == '^':
			out.WriteString(classLiteral(c))
		default:
			out.WriteByte(c)
		}
		first = false
	}
	return 0, false
}

// classLiteral writes c as a literal inside an RE2 bracket expression.
func classLiteral(c byte) string {
	if c == '-' || c == ']' || c == '[' || c == '^' || c == '\\' {
		return `\` + string(c)
	}
	return regexp.QuoteMeta(string(c))
}
