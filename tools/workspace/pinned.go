package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/ruleagent/ruleagent/tools"
)

// A workspace that holds one of the server's paths (a workspace of "."
// holding chains/) follows no symlink between its check and its use:
// resolve returns the path with every symlink followed, and the file is
// then reached one component at a time with O_NOFOLLOW, so that a folder
// a command swapped for a symlink into chains/ since the check is refused
// instead of followed. Other workspaces go through the os.Root, which
// already keeps every access inside the tree.

// errSwapped refuses a path that changed into a symlink after its check.
func errSwapped(p string) error {
	return tools.Errorf(tools.ErrPolicyDenied, "%s changed while it was being checked (a folder became a symlink); try again", displayPath(p))
}

// pinned reports whether accesses must follow no symlink.
func (w *Workspace) pinned() bool { return len(w.serverRel) > 0 }

// openDir opens the workspace-relative directory dir (as resolved)
// component by component without following symlinks, creating the
// missing ones when create is set. The caller closes the descriptor.
func (w *Workspace) openDir(p, dir string, create bool) (int, error) {
	fd, err := unix.Open(w.realDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, w.fsError(p, err)
	}
	for _, c := range splitPath(dir) {
		if c == "." || c == "" {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		switch {
		case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
			return -1, errSwapped(p)
		case err != nil:
			return -1, w.fsError(p, err)
		}
		fd = next
	}
	return fd, nil
}

// openPinned opens the regular file rel (as resolved) for reading.
func (w *Workspace) openPinned(p, rel string) (*os.File, error) {
	dfd, err := w.openDir(p, path.Dir(rel), false)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	name := path.Base(rel)
	if rel == "." {
		name = "."
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, errSwapped(p)
	}
	if err != nil {
		return nil, w.fsError(p, &fs.PathError{Op: "open", Path: rel, Err: err})
	}
	return os.NewFile(uintptr(fd), rel), nil
}

// writePinned is WriteFileAtomic's write for a pinned workspace: the
// temporary file, its mode and the rename all happen in the directory
// opened without following symlinks.
func (w *Workspace) writePinned(p, rel string, data []byte, perm fs.FileMode) error {
	dfd, err := w.openDir(p, path.Dir(rel), true)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	base := path.Base(rel)
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return tools.Errorf(tools.ErrInvalidArgs, "%s is a directory", p)
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return errSwapped(p)
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1:
		return tools.Errorf(tools.ErrPolicyDenied, "%s has %d hard links; hard-linked files are refused because another link may lie outside the workspace", rel, st.Nlink)
	case err == nil:
		perm = fs.FileMode(st.Mode & 0o777)
	case !errors.Is(err, unix.ENOENT):
		return w.fsError(p, err)
	}
	tmp := "." + base + ".tmp-" + randomSuffix()
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return w.fsError(p, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		// The mode given to openat is filtered by the umask.
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, base)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return w.fsError(p, err)
	}
	_ = unix.Fsync(dfd)
	return nil
}
