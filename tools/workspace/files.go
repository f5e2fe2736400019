package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/ruleagent/ruleagent/tools"
)

// Stat resolves p and stats the file it names.
func (w *Workspace) Stat(p string) (rel string, fi fs.FileInfo, err error) {
	rel, err = w.Resolve(p)
	if err != nil {
		return "", nil, err
	}
	fi, err = w.rootFS().Stat(rel)
	if err != nil {
		return "", nil, w.fsError(p, err)
	}
	return rel, fi, nil
}

// Open resolves p and opens the regular file it names for reading. Files
// with several hard links are refused (see CheckLinks).
func (w *Workspace) Open(p string) (rel string, f *os.File, fi fs.FileInfo, err error) {
	rel, err = w.Resolve(p)
	if err != nil {
		return "", nil, nil, err
	}
	if w.checked != nil {
		w.checked()
	}
	// O_NONBLOCK: opening a FIFO must not block the call (it is refused
	// just below); regular files ignore the flag.
	if w.pinned() {
		f, err = w.openPinned(p, rel)
	} else {
		f, err = w.rootFS().OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return "", nil, nil, w.fsError(p, err)
	}
	fi, err = f.Stat()
	if err == nil && !fi.Mode().IsRegular() && !fi.IsDir() {
		err = tools.Errorf(tools.ErrInvalidArgs, "%s is not a regular file (%s)", p, fi.Mode().Type())
	}
	if err == nil {
		err = CheckLinks(rel, fi)
	}
	if err != nil {
		f.Close()
		return "", nil, nil, w.fsError(p, err)
	}
	return rel, f, fi, nil
}

// OpenListed opens for reading the workspace-relative path rel a listing
// or walk found, without resolving it again: through the os.Root, or,
// when the workspace holds a server path, without following any symlink
// (see pinned.go). It does not block on a FIFO.
func (w *Workspace) OpenListed(rel string) (*os.File, error) {
	if err := w.Ready(); err != nil {
		return nil, err
	}
	if w.pinned() {
		return w.openPinned(rel, rel)
	}
	return w.rootFS().OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// ReadFile reads the whole regular file p, refusing files larger than max
// bytes (max <= 0 means no limit).
func (w *Workspace) ReadFile(p string, max int64) (rel string, data []byte, err error) {
	rel, f, fi, err := w.Open(p)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	if fi.IsDir() {
		return "", nil, tools.Errorf(tools.ErrInvalidArgs, "%s is a directory", p)
	}
	if max > 0 && fi.Size() > max {
		return "", nil, tools.Errorf(tools.ErrInvalidArgs, "%s is %d bytes, over the limit of %d", p, fi.Size(), max)
	}
	data, err = io.ReadAll(f)
	if err != nil {
		return "", nil, w.fsError(p, err)
	}
	return rel, data, nil
}

// WriteFileAtomic writes data to p through a temporary file in the same
// directory and a rename, so readers never see a half-written file. Missing
// parent directories are created. An existing file keeps its permission
// bits; a new one gets perm. Hard-linked targets are refused.
func (w *Workspace) WriteFileAtomic(p string, data []byte, perm fs.FileMode) (rel string, err error) {
	rel, err = w.ResolveNew(p)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", tools.Errorf(tools.ErrInvalidPath, "%q names the workspace directory, not a file", p)
	}
	if w.checked != nil {
		w.checked()
	}
	if w.pinned() {
		if err := w.writePinned(p, rel, data, perm); err != nil {
			return "", err
		}
		return rel, nil
	}
	if fi, err := w.rootFS().Stat(rel); err == nil {
		if fi.IsDir() {
			return "", tools.Errorf(tools.ErrInvalidArgs, "%s is a directory", p)
		}
		if err := CheckLinks(rel, fi); err != nil {
			return "", err
		}
		perm = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", w.fsError(p, err)
	}
	if dir := path.Dir(rel); dir != "." {
		if err := w.rootFS().MkdirAll(dir, 0o755); err != nil {
			return "", w.fsError(p, err)
		}
	}
	tmp := path.Join(path.Dir(rel), "."+path.Base(rel)+".tmp-"+randomSuffix())
	f, err := w.rootFS().OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return "", w.fsError(p, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// OpenFile's perm is filtered by the umask; make the bits exact.
		err = w.rootFS().Chmod(tmp, perm)
	}
	if err == nil {
		err = w.rootFS().Rename(tmp, rel)
	}
	if err != nil {
		w.rootFS().Remove(tmp)
		return "", w.fsError(p, err)
	}
	// Make the rename itself durable.
	if d, derr := w.rootFS().Open(path.Dir(rel)); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return rel, nil
}

// ReadDir lists the directory p, leaving out denied entries.
func (w *Workspace) ReadDir(p string) (rel string, entries []fs.DirEntry, err error) {
	rel, err = w.Resolve(p)
	if err != nil {
		return "", nil, err
	}
	all, err := fs.ReadDir(w.rootFS().FS(), rel)
	if err != nil {
		return "", nil, w.fsError(p, err)
	}
	entries = all[:0]
	for _, e := range all {
		if !w.IsDenied(path.Join(rel, e.Name())) {
			entries = append(entries, e)
		}
	}
	return rel, entries, nil
}

// Walk walks the tree under the workspace-relative directory rel in lexical
// order, skipping denied paths. Symlinks are reported, not followed.
func (w *Workspace) Walk(rel string, fn fs.WalkDirFunc) error {
	if err := w.Ready(); err != nil {
		return err
	}
	return fs.WalkDir(w.rootFS().FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if p != rel && w.IsDenied(p) {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, d, err)
	})
}

// fsError turns an os error into a typed tool error.
func (w *Workspace) fsError(p string, err error) error {
	var te *tools.Error
	switch {
	case errors.As(err, &te):
		return err
	case errors.Is(err, fs.ErrNotExist):
		return tools.Errorf(tools.ErrFileNotFound, "%s does not exist", displayPath(p))
	case errors.Is(err, fs.ErrPermission):
		return tools.Wrap(tools.ErrPolicyDenied, err, "%s", displayPath(p))
	default:
		// Resolve has already refused escapes, so an os.Root escape error
		// here means the tree changed under us; like any other I/O error
		// it is an execution failure.
		return tools.Wrap(tools.ErrExecutionFailed, err, "%s", displayPath(p))
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// rootFS is the opened root; every caller has resolved a path first, which
// made the workspace ready.
func (w *Workspace) rootFS() *os.Root { return w.root.Load() }
