package workspace

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/ruleagent/ruleagent/tools"
)

// The server's own paths (tools.ServerPath: its chains folder, its data)
// as a workspace sees them: which of its paths they are, and the refusal
// of a read or write that reaches one.

// serverRel is a server path relative to the workspace: rel is "." when
// the workspace lies inside it.
type serverRel struct {
	rel string
	sp  tools.ServerPath
}

// relServerPaths keeps the server paths that are the workspace, hold it,
// or lie inside it, under either of its names.
func relServerPaths(paths []tools.ServerPath, dirs ...string) []serverRel {
	var out []serverRel
	for _, sp := range paths {
		for _, base := range dirs {
			rel := ""
			switch {
			case sp.Covers(base):
				rel = "."
			case strings.HasPrefix(sp.Path, base+string(filepath.Separator)):
				rel = filepath.ToSlash(sp.Path[len(base)+1:])
			default:
				continue
			}
			if !slices.ContainsFunc(out, func(r serverRel) bool { return r.rel == rel && r.sp.Secret == sp.Secret }) {
				out = append(out, serverRel{rel: rel, sp: sp})
			}
		}
	}
	return out
}

// serverPath returns the server path a clean workspace-relative path
// reaches for the given access: every one when writing, the secret ones
// when reading.
func (w *Workspace) serverPath(rel string, write bool) (tools.ServerPath, bool) {
	for _, r := range w.serverRel {
		if (write || r.sp.Secret) && (r.rel == "." || rel == r.rel || strings.HasPrefix(rel, r.rel+"/")) {
			return r.sp, true
		}
	}
	return tools.ServerPath{}, false
}

// checkServerPath refuses rel, which p names, when it reaches a server
// path for the given access.
func (w *Workspace) checkServerPath(p, rel string, write bool) error {
	if len(w.serverRel) == 0 {
		return nil
	}
	if sp, ok := w.serverPath(rel, write); ok {
		return &tools.ServerPathError{Name: displayPath(p), Owner: sp, Write: write}
	}
	return nil
}

// withRealPaths adds to paths the symlink-resolved name of each (of its
// longest existing part), so that a workspace reached through a symlink
// is compared on both sides alike.
func withRealPaths(paths []tools.ServerPath) []tools.ServerPath {
	out := slices.Clone(paths)
	for _, sp := range paths {
		if real := RealPath(sp.Path); real != sp.Path {
			sp.Path = real
			out = append(out, sp)
		}
	}
	return out
}

// RealPath resolves the symlinks of abs's longest existing part and
// appends the rest.
func RealPath(abs string) string {
	abs = filepath.Clean(abs)
	rest := ""
	for cur := abs; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		if filepath.Dir(cur) == cur {
			return abs
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
