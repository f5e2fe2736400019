package grep

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/gitignore"
	"github.com/ruleagent/ruleagent/tools/textfile"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// search is the state of one call.
type search struct {
	ws               *workspace.Workspace
	lines            *scanner
	mode             string
	context          int
	limit            int
	capped           bool // the model asked for more than the config allows
	maxSize          int64
	include, exclude string
	root             string // the searched directory, for path globs

	out     strings.Builder
	results int
	more    bool // a result beyond limit exists
	// Counts for the report.
	searched, binary, large, linked int
}

// run searches rel, a file or a directory.
func (s *search) run(ctx context.Context, rel string, fi fs.FileInfo) error {
	if !fi.IsDir() {
		if !fi.Mode().IsRegular() {
			return tools.Errorf(tools.ErrInvalidArgs, "%s is not a regular file (%s)", rel, fi.Mode().Type())
		}
		// A file named explicitly is searched even if ignored or
		// excluded: the model asked for it.
		return s.file(rel)
	}
	s.root = rel
	root, err := s.ws.Root()
	if err != nil {
		return err
	}
	err = gitignore.Walk(root.FS(), rel, s.ws.IsDenied, func(p string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return filetool.CtxError(err, "search")
		}
		if p == rel {
			return nil
		}
		if d.IsDir() {
			if s.excluded(p, s.exclude) {
				return fs.SkipDir
			}
			return nil
		}
		// Symlinks are not followed: a target inside the workspace is
		// searched where it lies. Devices and FIFOs are never read.
		if !d.Type().IsRegular() || s.excluded(p, s.exclude) || s.include != "" && !s.excluded(p, s.include) {
			return nil
		}
		if err := s.file(p); err != nil {
			return err
		}
		if s.more {
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return err
		}
		return tools.Wrap(tools.ErrExecutionFailed, err, "searching %s", rel)
	}
	return nil
}

// excluded reports whether glob matches p: a glob without a slash matches
// the base name, one with a slash the path below the searched directory.
func (s *search) excluded(p, glob string) bool {
	if glob == "" {
		return false
	}
	name := path.Base(p)
	if strings.Contains(glob, "/") {
		name = p
		if s.root != "." {
			name = strings.TrimPrefix(p, s.root+"/")
		}
	}
	ok, _ := doublestar.Match(glob, name)
	return ok
}

// file searches one workspace file. Files the workspace refuses to read
// (several hard links), binary files and files over maxFileSize are
// skipped and counted.
func (s *search) file(rel string) error {
	// O_NONBLOCK: a FIFO swapped in since the listing must not block the
	// open; it is then refused as not regular.
	f, err := s.ws.OpenListed(rel)
	if err != nil {
		return nil // vanished or unreadable since the listing
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil || !fi.Mode().IsRegular():
		return nil
	case workspace.CheckLinks(rel, fi) != nil:
		s.linked++
		return nil
	case fi.Size() > s.maxSize:
		s.large++
		return nil
	}
	s.searched++
	var out fileOutput
	switch s.mode {
	case modeContent:
		out = &contentOutput{s: s, path: rel}
	case modeFiles:
		out = &filesOutput{s: s, path: rel}
	default:
		out = &countOutput{s: s, path: rel}
	}
	err = s.lines.scan(f, s.context > 0, out.line)
	if errors.Is(err, errBinary) {
		s.searched--
		s.binary++
		return nil
	}
	if err != nil {
		return tools.Wrap(tools.ErrExecutionFailed, err, "reading %s", rel)
	}
	out.done()
	return nil
}

// full reports whether the result limit is reached; the next result found
// only proves that there are more.
func (s *search) full() bool {
	if s.results >= s.limit {
		s.more = true
		return true
	}
	return false
}

// report is the text the model reads.
func (s *search) report(pattern, rel string, dir bool) string {
	where := rel
	if dir {
		where = "directory " + rel
		if rel == "." {
			where = "the workspace"
		}
	}
	var b strings.Builder
	if s.results == 0 {
		fmt.Fprintf(&b, "No matches for %s in %s.\n", strconv.Quote(pattern), where)
	} else {
		b.WriteString(s.out.String())
	}
	var notes []string
	if s.more {
		unit := "matching line"
		if s.mode != modeContent {
			unit = "file"
		}
		note := fmt.Sprintf("results truncated: showing the first %s; there are more", plural(s.limit, unit))
		if s.capped {
			note += fmt.Sprintf(" (max_results is capped at %d by configuration)", s.limit)
		}
		notes = append(notes, note+". Narrow the pattern, path or include glob")
	}
	if dir {
		notes = append(notes, plural(s.searched, "file")+" searched")
	}
	if s.binary > 0 {
		notes = append(notes, plural(s.binary, "binary file")+" skipped")
	}
	if s.large > 0 {
		notes = append(notes, fmt.Sprintf("%s over %s skipped", plural(s.large, "file"), filetool.Size(s.maxSize)))
	}
	if s.linked > 0 {
		notes = append(notes, plural(s.linked, "hard-linked file")+" skipped")
	}
	if len(notes) > 0 {
		b.WriteString("[" + strings.Join(notes, "; ") + "]\n")
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// fileOutput writes one file's results in one output mode.
type fileOutput interface {
	line(no int, text []byte, match bool) bool
	done()
}

// contentOutput writes path:line: text for matches and path-line- text for
// context lines, with "--" between groups that are not adjacent.
type contentOutput struct {
	s         *search
	path      string
	before    []numbered // the last lines seen, for before-context
	afterLeft int        // context lines still owed after a match
	last      int        // number of the last line written, 0 if none
}

type numbered struct {
	no   int
	text string
}

func (c *contentOutput) line(no int, text []byte, match bool) bool {
	s := c.s
	if match {
		if s.full() {
			return false
		}
		for _, b := range c.before {
			c.write(b.no, b.text, '-')
		}
		c.before = c.before[:0]
		c.write(no, string(text), ':')
		s.results++
		c.afterLeft = s.context
		return true
	}
	if c.afterLeft > 0 {
		c.afterLeft--
		c.write(no, string(text), '-')
		return true
	}
	if s.results >= s.limit {
		return true // read on only to learn whether there are more
	}
	if s.context > 0 {
		if len(c.before) == s.context {
			copy(c.before, c.before[1:])
			c.before = c.before[:len(c.before)-1]
		}
		c.before = append(c.before, numbered{no, string(text)})
	}
	return true
}

func (c *contentOutput) write(no int, text string, sep byte) {
	out := &c.s.out
	if c.s.context > 0 && c.last > 0 && no > c.last+1 || c.s.context > 0 && c.last == 0 && out.Len() > 0 {
		out.WriteString("--\n")
	}
	out.WriteString(c.path)
	out.WriteByte(sep)
	out.WriteString(strconv.Itoa(no))
	out.WriteByte(sep)
	out.WriteByte(' ')
	out.WriteString(textfile.Clip(strings.ToValidUTF8(text, "\uFFFD"), maxLineBytes))
	out.WriteByte('\n')
	c.last = no
}

func (c *contentOutput) done() {}

// filesOutput lists the file at its first match.
type filesOutput struct {
	s    *search
	path string
}

func (f *filesOutput) line(int, []byte, bool) bool {
	if !f.s.full() {
		f.s.out.WriteString(f.path + "\n")
		f.s.results++
	}
	return false // one match is enough
}

func (f *filesOutput) done() {}

// countOutput counts the matching lines of the file.
type countOutput struct {
	s    *search
	path string
	n    int
}

func (c *countOutput) line(int, []byte, bool) bool {
	if c.n == 0 && c.s.full() {
		return false
	}
	c.n++
	return true
}

func (c *countOutput) done() {
	if c.n > 0 {
		fmt.Fprintf(&c.s.out, "%s:%d\n", c.path, c.n)
		c.s.results++
	}
}
