package read

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/textfile"
)

// maxHitBytes is how much of a matching line a search result shows.
const maxHitBytes = 300

// skippedDirs are never searched: version-control internals are large, and
// their contents duplicate the working tree.
var skippedDirs = map[string]bool{".git": true, ".hg": true, ".svn": true}

// searcher holds the state of one search.
type searcher struct {
	t       *Tool
	match   func([]byte) bool
	pattern string
	root    string // workspace-relative directory searched
	hits    []string
	more    bool // a match beyond maxSearchResults exists
	files   int
	binary  int
	large   int
}

func (t *Tool) search(ctx context.Context, a Args) (string, error) {
	if a.Query == "" {
		return "", tools.Errorf(tools.ErrInvalidArgs, "query is required for operation search")
	}
	match, err := newMatcher(a.Query, a.UseRegex, a.IgnoreCase)
	if err != nil {
		return "", err
	}
	if a.Pattern != "" && !doublestar.ValidatePattern(a.Pattern) {
		return "", tools.Errorf(tools.ErrInvalidArgs, "pattern %q is not a valid glob", a.Pattern)
	}
	rel, fi, err := t.ws.Stat(a.Path)
	if err != nil {
		return "", err
	}
	s := &searcher{t: t, match: match, pattern: a.Pattern, root: rel}
	where := rel
	if fi.IsDir() {
		where = displayDir(rel)
		err = t.ws.Walk(rel, func(p string, d fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return filetool.CtxError(cerr, "search")
			}
			return s.visit(p, d, err)
		})
	} else if fi.Mode().IsRegular() {
		s.root = path.Dir(rel)
		err = s.searchFile(rel)
	} else {
		err = tools.Errorf(tools.ErrInvalidArgs, "%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	if err != nil {
		return "", err
	}
	return s.report(a.Query, where), nil
}

// newMatcher compiles the query. Go's regexp is RE2 and runs in linear
// time, so no pattern can blow up; the length bound only keeps the
// compiled program small.
func newMatcher(query string, useRegex, ignoreCase bool) (func([]byte) bool, error) {
	if !useRegex && !ignoreCase {
		q := []byte(query)
		return func(line []byte) bool { return bytes.Contains(line, q) }, nil
	}
	expr := query
	if useRegex {
		if len(query) > maxRegexLen {
			return nil, tools.Errorf(tools.ErrInvalidArgs, "the regular expression is %d characters long; the limit is %d", len(query), maxRegexLen)
		}
	} else {
		expr = regexp.QuoteMeta(query)
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, tools.Wrap(tools.ErrInvalidArgs, err, "query is not a valid Go (RE2) regular expression")
	}
	return re.Match, nil
}

func (s *searcher) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		if p == s.root {
			return tools.Wrap(tools.ErrExecutionFailed, err, "searching %s", p)
		}
		return nil // an unreadable sub-directory is skipped, not fatal
	}
	switch {
	case d.IsDir():
		if p != s.root && skippedDirs[d.Name()] {
			return fs.SkipDir
		}
		return nil
	case !d.Type().IsRegular():
		// Symlinks are not followed: their targets are searched where they
		// lie if they are inside the workspace, and never otherwise.
		return nil
	case !s.selected(p):
		return nil
	}
	if err := s.searchFile(p); err != nil {
		return err
	}
	if s.more {
		return fs.SkipAll
	}
	return nil
}

// selected applies the glob: a pattern without a slash matches the file
// name, one with a slash the path below the searched directory.
func (s *searcher) selected(p string) bool {
	if s.pattern == "" {
		return true
	}
	name := path.Base(p)
	if strings.Contains(s.pattern, "/") {
		name = strings.TrimPrefix(p, s.root+"/")
		if s.root == "." {
			name = p
		}
	}
	ok, _ := doublestar.Match(s.pattern, name)
	return ok
}

// searchFile adds the matching lines of the workspace file p. Files the
// workspace refuses (hard links), binary files and files over maxFileSize
// are skipped.
func (s *searcher) searchFile(p string) error {
	_, f, fi, err := s.t.ws.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi.Size() > s.t.cfg.MaxFileSize {
		s.large++
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, s.t.cfg.MaxFileSize))
	if err != nil {
		return nil
	}
	s.files++
	if textfile.IsBinary(data) {
		s.binary++
		return nil
	}
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if !s.match(line) {
			continue
		}
		if len(s.hits) == s.t.cfg.MaxSearchResults {
			s.more = true
			return nil
		}
		text := strings.TrimSpace(string(bytes.TrimRight(line, "\r")))
		s.hits = append(s.hits, fmt.Sprintf("%s:%d: %s", p, n, textfile.Clip(strings.ToValidUTF8(text, "\uFFFD"), maxHitBytes)))
	}
	return nil
}

func (s *searcher) report(query, where string) string {
	var skipped []string
	if s.binary > 0 {
		skipped = append(skipped, plural(s.binary, "binary file")+" skipped")
	}
	if s.large > 0 {
		skipped = append(skipped, fmt.Sprintf("%s over %s skipped", plural(s.large, "file"), filetool.Size(s.t.cfg.MaxFileSize)))
	}
	scope := plural(s.files, "file") + " searched"
	if len(skipped) > 0 {
		scope += "; " + strings.Join(skipped, ", ")
	}
	if len(s.hits) == 0 {
		return fmt.Sprintf("no matches for %s in %s (%s)", quote(query), where, scope)
	}
	var b strings.Builder
	if s.more {
		fmt.Fprintf(&b, "first %d matches for %s in %s (more exist; narrow the search with path or pattern):\n", len(s.hits), quote(query), where)
	} else {
		fmt.Fprintf(&b, "%s for %s in %s (%s):\n", plural(len(s.hits), "match"), quote(query), where, scope)
	}
	for _, h := range s.hits {
		b.WriteString(h)
		b.WriteByte('\n')
	}
	return b.String()
}

// quote shows the query as the model wrote it, in quotes; Go quoting, which
// doubles every backslash of a regex, only when it holds control characters.
func quote(q string) string {
	if strings.IndexFunc(q, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return strconv.Quote(q)
	}
	return `"` + q + `"`
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	switch {
	case strings.HasSuffix(noun, "ch"):
		return fmt.Sprintf("%d %ses", n, noun)
	case strings.HasSuffix(noun, "y"):
		return fmt.Sprintf("%d %sies", n, noun[:len(noun)-1])
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
