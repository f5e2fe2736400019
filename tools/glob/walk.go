package glob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/ruleagent/ruleagent/tools"
	"github.com/ruleagent/ruleagent/tools/filetool"
	"github.com/ruleagent/ruleagent/tools/gitignore"
	"github.com/ruleagent/ruleagent/tools/workspace"
)

// globber is the state of one call.
type globber struct {
	ws       *workspace.Workspace
	root     string   // the searched directory, workspace-relative
	pattern  string   // relative to root
	segments []string // pattern components for pruning; nil: no pruning
	limit    int
	capped   bool
	byMtime  bool

	matches []match
	more    bool // path order: a match beyond limit exists
	total   int  // mtime order: how many matched
	partial bool // mtime order: stopped collecting at maxSorted
}

type match struct {
	path  string
	mtime time.Time
}

func (g *globber) run(ctx context.Context) error {
	root, err := g.ws.Root()
	if err != nil {
		return err
	}
	err = gitignore.Walk(root.FS(), g.root, g.ws.IsDenied, func(p string, d fs.DirEntry) error {
		if err := ctx.Err(); err != nil {
			return filetool.CtxError(err, "glob")
		}
		if p == g.root {
			return nil
		}
		below := g.below(p)
		if d.IsDir() {
			if !g.mayContain(below) {
				return fs.SkipDir
			}
			return nil
		}
		if ok, _ := doublestar.Match(g.pattern, below); !ok {
			return nil
		}
		return g.add(p, d)
	})
	if err != nil {
		var te *tools.Error
		if errors.As(err, &te) {
			return err
		}
		return tools.Wrap(tools.ErrExecutionFailed, err, "listing %s", g.root)
	}
	if g.byMtime {
		slices.SortStableFunc(g.matches, func(a, b match) int {
			return cmp.Or(b.mtime.Compare(a.mtime), strings.Compare(a.path, b.path))
		})
		if len(g.matches) > g.limit {
			g.matches = g.matches[:g.limit]
		}
	}
	return nil
}

// add records a match. In path order the walk stops at the first match
// past the limit; in mtime order every match is needed to find the newest.
func (g *globber) add(p string, d fs.DirEntry) error {
	if !g.byMtime {
		if len(g.matches) == g.limit {
			g.more = true
			return fs.SkipAll
		}
		g.matches = append(g.matches, match{path: p})
		return nil
	}
	g.total++
	if len(g.matches) == maxSorted {
		g.partial = true
		return fs.SkipAll
	}
	var mtime time.Time
	if info, err := d.Info(); err == nil {
		mtime = info.ModTime()
	}
	g.matches = append(g.matches, match{path: p, mtime: mtime})
	return nil
}

// below returns p relative to the searched directory.
func (g *globber) below(p string) string {
	if g.root == "." {
		return p
	}
	return strings.TrimPrefix(p, g.root+"/")
}

// mayContain reports whether files under directory dir (relative to the
// searched directory) can match: each of its components must match the
// pattern's component at the same depth, until a ** that matches any depth.
func (g *globber) mayContain(dir string) bool {
	if g.segments == nil {
		return true
	}
	i := 0
	for c := range strings.SplitSeq(dir, "/") {
		if g.segments[i] == "**" {
			return true
		}
		if i == len(g.segments)-1 {
			return false // files here would be deeper than the pattern
		}
		if ok, _ := doublestar.Match(g.segments[i], c); !ok {
			return false
		}
		i++
	}
	return true
}

// report is the text the model reads.
func (g *globber) report(pattern string) string {
	var b strings.Builder
	where := "directory " + g.root
	if g.root == "." {
		where = "the workspace"
	}
	if len(g.matches) == 0 {
		fmt.Fprintf(&b, "No files match %s in %s.", strconv.Quote(pattern), where)
		if !strings.Contains(g.pattern, "/") && !strings.HasPrefix(g.pattern, "**") {
			fmt.Fprintf(&b, " A pattern without a slash matches only directly in %s; use %s to search subdirectories too.",
				where, strconv.Quote("**/"+g.pattern))
		}
		b.WriteString("\n")
		return b.String()
	}
	for _, m := range g.matches {
		b.WriteString(m.path)
		b.WriteByte('\n')
	}
	var note string
	switch {
	case g.more:
		note = fmt.Sprintf("showing the first %d matches; there are more", g.limit)
	case g.partial:
		note = fmt.Sprintf("more than %d files match; the newest shown are the newest of the first %d in path order", maxSorted, maxSorted)
	case g.byMtime && g.total > g.limit:
		note = fmt.Sprintf("showing the %d most recently modified of %d matches", g.limit, g.total)
	}
	if note != "" {
		if g.capped {
			note += fmt.Sprintf(" (max_results is capped at %d by configuration)", g.limit)
		}
		b.WriteString("[" + note + ". Narrow the pattern or path]\n")
	}
	return b.String()
}
