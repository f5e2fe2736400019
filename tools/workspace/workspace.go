// Package workspace confines file access to one directory tree.
//
// Every file tool, and bash's working directory, resolve the paths the model
// gives through a Workspace. Access goes through an os.Root, so the kernel
// refuses to follow anything out of the tree even if the tree changes between
// a check and a use. On top of that, Resolve walks a path one component at a
// time so that it can explain refusals (a `..` that climbs out, a symlink
// that points out, a dangling symlink, a denied sub-path) and so that denied
// sub-paths cannot be reached through a symlink either.
package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ruleagent/ruleagent/tools"
)

// MaxPathLen bounds the length of a path the model may give.
const MaxPathLen = 4096

// maxLinkHops bounds symlink resolution, as the kernel's ELOOP does.
const maxLinkHops = 40

// Options tune a Workspace.
type Options struct {
	// Deny lists workspace-relative paths (files or directories) that tools
	// may neither read, write nor list. A denied directory denies all of its
	// contents. Listings and searches skip them silently.
	Deny []string
	// ServerPaths are the server's own files and folders (absolute): a
	// path that reaches one, also through a symlink, is refused with a
	// *tools.ServerPathError: for writing always, for reading when it is
	// secret (listings and searches skip those silently, as denied ones).
	ServerPaths []tools.ServerPath
}

// Workspace is one confined directory tree. It is safe for concurrent use.
//
// The directory is created, and opened as an os.Root, at first use, not
// when the workspace is opened: loading a chain (every node of every chain
// of a folder initialises when the folder loads) must not create folders
// for agents that never run.
type Workspace struct {
	dir  string   // as configured, absolute and clean
	deny []string // clean, slash-separated, relative
	// server are the server paths, as given and with symlinks resolved;
	// serverRel those that concern the workspace, relative to it (set
	// with root).
	server    []tools.ServerPath
	serverRel []serverRel
	// checked, when set (by tests), runs between a path's check and its
	// use, where a concurrent command could change the tree.
	checked func()

	mu      sync.Mutex
	root    atomic.Pointer[os.Root]
	realDir string // dir with symlinks resolved, set with root
	closed  bool
}

// Open returns the workspace at dir; a relative dir is taken from the
// process's working directory. An existing directory is opened now; a
// missing one is created at first use. A dir that still holds a ${...}
// placeholder (a ${global.x} nobody set) is refused, naming it: no
// directory is ever created with such a name.
func Open(dir string, opts Options) (*Workspace, error) {
	if dir == "" {
		dir = "."
	}
	if v, ok := placeholder(dir); ok {
		return nil, fmt.Errorf("workspace %q: %s is not set, so the path is not known", dir, v)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %q: %w", dir, err)
	}
	w := &Workspace{dir: abs}
	for _, d := range opts.Deny {
		c := path.Clean(filepath.ToSlash(strings.TrimSpace(d)))
		c = strings.TrimPrefix(c, "/")
		if c == "" || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return nil, fmt.Errorf("workspace: deny entry %q must be a path inside the workspace", d)
		}
		w.deny = append(w.deny, c)
	}
	w.server = withRealPaths(opts.ServerPaths)
	if fi, err := os.Stat(abs); err == nil {
		if !fi.IsDir() {
			return nil, fmt.Errorf("workspace %q: not a directory", dir)
		}
		if err := w.Ready(); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// placeholder finds a ${...} placeholder in s.
func placeholder(s string) (string, bool) {
	i := strings.Index(s, "${")
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(s[i:], '}')
	if j < 0 {
		return s[i:], true
	}
	return s[i : i+j+1], true
}

// Ready creates the workspace directory if it does not exist yet and opens
// it. Every method that touches the tree calls it; a caller that hands the
// directory to another program (bash runs commands in it) calls it first.
func (w *Workspace) Ready() error {
	if w.root.Load() != nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.root.Load() != nil {
		return nil
	}
	if w.closed {
		return tools.Errorf(tools.ErrExecutionFailed, "the workspace %s is closed", w.dir)
	}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return tools.Wrap(tools.ErrExecutionFailed, err, "the workspace %s cannot be created", w.dir)
	}
	real, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		return tools.Wrap(tools.ErrExecutionFailed, err, "the workspace %s", w.dir)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return tools.Wrap(tools.ErrExecutionFailed, err, "the workspace %s", w.dir)
	}
	w.realDir = real
	w.serverRel = relServerPaths(w.server, w.dir, real)
	w.root.Store(root)
	return nil
}

// Dir is the workspace directory, absolute. It may not exist before the
// workspace is first used (see Ready).
func (w *Workspace) Dir() string { return w.dir }

// Root is the os.Root every access goes through, the directory created if
// needed.
func (w *Workspace) Root() (*os.Root, error) {
	if err := w.Ready(); err != nil {
		return nil, err
	}
	return w.root.Load(), nil
}

// Close releases the root, if it was opened; a workspace closed before
// its first use is never created.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if r := w.root.Load(); r != nil {
		return r.Close()
	}
	return nil
}

// Abs returns the absolute path of a workspace-relative path.
func (w *Workspace) Abs(rel string) string {
	if rel == "" || rel == "." {
		return w.dir
	}
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

// IsDenied reports whether a clean workspace-relative path is, or lies
// under, a denied sub-path.
func (w *Workspace) IsDenied(rel string) bool {
	for _, d := range w.deny {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	if len(w.serverRel) > 0 {
		_, hit := w.serverPath(rel, false)
		return hit
	}
	return false
}

// Resolve maps a path the model gave (relative to the workspace, or absolute
// inside it) to a clean, slash-separated workspace-relative path ("." is the
// workspace itself) naming an existing file or directory. Symlinks inside the
// workspace are followed. Errors are typed: tools.ErrInvalidPath for escapes
// and malformed paths, tools.ErrPolicyDenied for denied sub-paths,
// tools.ErrFileNotFound when it does not exist.
func (w *Workspace) Resolve(p string) (string, error) { return w.resolve(p, true, false) }

// ResolveNew is Resolve for a path about to be written, which may not exist
// yet. Its missing components are allowed, but a `..` after a missing
// component is refused (it could not be resolved on disk). A path that
// reaches one of the server's paths is refused (*tools.ServerPathError).
func (w *Workspace) ResolveNew(p string) (string, error) { return w.resolve(p, false, true) }

func (w *Workspace) resolve(p string, mustExist, write bool) (string, error) {
	if err := w.Ready(); err != nil {
		return "", err
	}
	root := w.root.Load()
	rel, err := w.lexicalRel(p)
	if err != nil {
		return "", err
	}
	queue := splitPath(rel)
	var out []string
	hops := 0
	missing := false
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if missing {
				return "", tools.Errorf(tools.ErrInvalidPath, "%q: '..' after a directory that does not exist", p)
			}
			if len(out) == 0 {
				return "", tools.Errorf(tools.ErrInvalidPath, "%q escapes the workspace", p)
			}
			out = out[:len(out)-1]
			continue
		}
		if missing {
			out = append(out, c)
			continue
		}
		cur := path.Join(append(out, c)...)
		// Refuse denied paths before looking at them, so the answer does
		// not reveal whether something exists there.
		if err := w.checkServerPath(p, cur, false); err != nil {
			return "", err
		}
		if w.IsDenied(cur) {
			return "", tools.Errorf(tools.ErrPolicyDenied, "%s is in a denied part of the workspace", displayPath(p))
		}
		fi, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if mustExist {
				return "", tools.Errorf(tools.ErrFileNotFound, "%s does not exist", displayPath(p))
			}
			missing = true
			out = append(out, c)
			continue
		}
		if err != nil {
			return "", tools.Wrap(tools.ErrInvalidPath, err, "%s", displayPath(p))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if len(queue) > 0 && !fi.IsDir() && hasMore(queue) {
				return "", tools.Errorf(tools.ErrInvalidPath, "%s: %s is not a directory", displayPath(p), cur)
			}
			out = append(out, c)
			continue
		}
		hops++
		if hops > maxLinkHops {
			return "", tools.Errorf(tools.ErrInvalidPath, "%s: too many levels of symbolic links", displayPath(p))
		}
		target, err := root.Readlink(cur)
		if err != nil {
			return "", tools.Wrap(tools.ErrInvalidPath, err, "%s", displayPath(p))
		}
		if filepath.IsAbs(target) {
			trel, ok := w.relOf(filepath.Clean(target))
			if !ok {
				return "", tools.Errorf(tools.ErrInvalidPath, "%s: symlink %s points outside the workspace", displayPath(p), cur)
			}
			out = nil
			queue = append(splitPath(trel), queue...)
			continue
		}
		queue = append(splitPath(filepath.ToSlash(target)), queue...)
	}
	res := "."
	if len(out) > 0 {
		res = path.Join(out...)
	}
	if err := w.checkServerPath(p, res, write); err != nil {
		return "", err
	}
	if w.IsDenied(res) {
		return "", tools.Errorf(tools.ErrPolicyDenied, "%s is in a denied part of the workspace", displayPath(p))
	}
	return res, nil
}

// lexicalRel turns p into a slash-separated path relative to the workspace,
// without touching the disk. `..` components are kept for the walk.
func (w *Workspace) lexicalRel(p string) (string, error) {
	switch {
	case len(p) > MaxPathLen:
		return "", tools.Errorf(tools.ErrInvalidPath, "path is longer than %d bytes", MaxPathLen)
	case strings.ContainsRune(p, 0):
		return "", tools.Errorf(tools.ErrInvalidPath, "path contains a NUL byte")
	case strings.HasPrefix(p, "~"):
		return "", tools.Errorf(tools.ErrInvalidPath, "%q: home-relative paths are not supported; use a path inside the workspace", p)
	case strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//"):
		return "", tools.Errorf(tools.ErrInvalidPath, "%q: network paths are not supported", p)
	}
	p = strings.TrimSpace(p)
	if p == "" {
		return ".", nil
	}
	if filepath.IsAbs(p) {
		rel, ok := w.relOf(filepath.Clean(p))
		if !ok {
			return "", tools.Errorf(tools.ErrInvalidPath, "%q is outside the workspace %s", p, w.dir)
		}
		return rel, nil
	}
	return filepath.ToSlash(p), nil
}

// relOf returns abs relative to the workspace if abs lies inside it, under
// either its configured or its symlink-resolved name.
func (w *Workspace) relOf(abs string) (string, bool) {
	for _, base := range []string{w.dir, w.realDir} {
		if abs == base {
			return ".", true
		}
		if strings.HasPrefix(abs, base+string(filepath.Separator)) {
			return filepath.ToSlash(abs[len(base)+1:]), true
		}
	}
	return "", false
}

// CheckLinks refuses a regular file with more than one hard link: its other
// names may lie outside the workspace, and writing through it would change
// a file out there.
func CheckLinks(rel string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return tools.Errorf(tools.ErrPolicyDenied, "%s has %d hard links; hard-linked files are refused because another link may lie outside the workspace", rel, st.Nlink)
	}
	return nil
}

func splitPath(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// hasMore reports whether the remaining queue names anything beyond "." or "".
func hasMore(queue []string) bool {
	for _, c := range queue {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}

func displayPath(p string) string {
	if p == "" {
		return "the workspace"
	}
	return p
}
