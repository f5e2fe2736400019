package read

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
)

// lister holds the state of one listing.
type lister struct {
	root     string
	maxDepth int
	limit    int
	lines    []string
	dirs     int
	files    int
	more     bool
}

// list lists a directory: one entry per line, directories with a trailing
// slash, symlinks with a trailing @, files with their size. Denied entries
// are left out, as if they did not exist.
func (t *Tool) list(ctx context.Context, a Args) (string, error) {
	depth := 1
	if a.Recursive || a.MaxDepth != 0 {
		depth = defaultMaxDepth
		if a.MaxDepth != 0 {
			depth = a.MaxDepth
		}
	}
	if depth < 1 || depth > maxMaxDepth {
		return "", tools.Errorf(tools.ErrInvalidArgs, "max_depth must be between 1 and %d, got %d", maxMaxDepth, a.MaxDepth)
	}
	rel, fi, err := t.ws.Stat(a.Path)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", tools.Errorf(tools.ErrInvalidArgs, "%s is a file, not a directory; use operation file to read it", rel)
	}
	l := &lister{root: rel, maxDepth: depth, limit: t.cfg.MaxListEntries}
	err = t.ws.Walk(rel, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return filetool.CtxError(cerr, "list")
		}
		return l.visit(p, d, err)
	})
	if err != nil {
		return "", err
	}
	return l.report(), nil
}

func (l *lister) visit(p string, d fs.DirEntry, err error) error {
	if p == l.root {
		if err != nil {
			return tools.Wrap(tools.ErrExecutionFailed, err, "listing %s", p)
		}
		return nil
	}
	if err != nil {
		return nil // an unreadable sub-directory is shown but not entered
	}
	if len(l.lines) == l.limit {
		l.more = true
		return fs.SkipAll
	}
	name := strings.TrimPrefix(p, l.root+"/")
	if l.root == "." {
		name = p
	}
	depth := strings.Count(name, "/") + 1
	switch {
	case d.IsDir():
		l.dirs++
		l.lines = append(l.lines, name+"/")
		if depth >= l.maxDepth || skippedDirs[d.Name()] {
			return fs.SkipDir
		}
	case d.Type()&fs.ModeSymlink != 0:
		l.files++
		l.lines = append(l.lines, name+"@")
	default:
		l.files++
		entry := name
		if info, err := d.Info(); err == nil {
			if info.Mode().IsRegular() {
				entry += " (" + filetool.Size(info.Size()) + ")"
			} else {
				entry += " (" + info.Mode().Type().String() + ")"
			}
		}
		l.lines = append(l.lines, entry)
	}
	return nil
}

func (l *lister) report() string {
	var b strings.Builder
	where := displayDir(l.root)
	var parts []string
	if l.dirs > 0 {
		parts = append(parts, plural(l.dirs, "directory"))
	}
	if l.files > 0 {
		parts = append(parts, plural(l.files, "file"))
	}
	counts := strings.Join(parts, ", ")
	switch {
	case len(l.lines) == 0:
		return where + " is empty"
	case l.more:
		fmt.Fprintf(&b, "%s: first %d entries (more exist; list a sub-directory, or lower max_depth)\n", where, len(l.lines))
	case l.maxDepth > 1:
		fmt.Fprintf(&b, "%s (%s, down to depth %d):\n", where, counts, l.maxDepth)
	default:
		fmt.Fprintf(&b, "%s (%s):\n", where, counts)
	}
	for _, line := range l.lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func displayDir(rel string) string {
	if rel == "." {
		return "the workspace"
	}
	return rel + "/"
}
