package gitignore

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
)

// MaxFileSize bounds how much of a .gitignore file is read. Real ones are a
// few KiB; the bound keeps a hostile file from costing memory.
const MaxFileSize = 1 << 20

// WalkFunc is called for every path Walk visits. Returning fs.SkipDir for a
// directory skips its contents (for a file, the rest of its directory);
// fs.SkipAll stops the walk; any other error stops it and is returned.
type WalkFunc func(p string, d fs.DirEntry) error

// Walk visits the tree under root in fsys, directory by directory in
// lexical order, leaving out what .gitignore files ignore:
//   - the .gitignore files of root and of every directory above it (up to
//     fsys's top) apply, each to its own directory, deeper ones winning;
//   - .git directories are always left out;
//   - symlinks are reported, never followed;
//   - root itself is always visited, even when a rule ignores it: asking
//     for it by name is a request to look inside;
//   - skip, when not nil, is asked about every path first (deny lists): a
//     skipped path is not visited, read or descended into, and a skipped
//     .gitignore file is not read.
//
// Directories that cannot be read are passed to fn and then left out.
func Walk(fsys fs.FS, root string, skip func(p string) bool, fn WalkFunc) error {
	root = path.Clean(root)
	info, err := fs.Stat(fsys, root)
	if err != nil {
		return err
	}
	err = fn(root, fs.FileInfoToDirEntry(info))
	if err != nil || !info.IsDir() {
		return walkResult(err)
	}
	var m *Matcher
	if root != "." {
		m = load(fsys, ".", m, skip)
		for i := 0; i < len(root); i++ {
			if root[i] == '/' {
				m = load(fsys, root[:i], m, skip)
			}
		}
	}
	return walkResult(walkDir(fsys, root, m, skip, fn))
}

func walkResult(err error) error {
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func walkDir(fsys fs.FS, dir string, m *Matcher, skip func(string) bool, fn WalkFunc) error {
	m = load(fsys, dir, m, skip)
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil // unreadable: nothing to visit in it
	}
	for _, e := range entries {
		p := join(dir, e.Name())
		if skip != nil && skip(p) {
			continue
		}
		isDir := e.IsDir()
		if isDir && e.Name() == ".git" || m.Match(p, isDir) {
			continue
		}
		if err := fn(p, e); err != nil {
			if errors.Is(err, fs.SkipDir) {
				if isDir {
					continue
				}
				return nil
			}
			return err
		}
		if isDir {
			if err := walkDir(fsys, p, m, skip, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// load returns m with dir's .gitignore rules added, if it has one.
func load(fsys fs.FS, dir string, m *Matcher, skip func(string) bool) *Matcher {
	p := join(dir, ".gitignore")
	if skip != nil && skip(p) {
		return m
	}
	// Stat before opening: opening a FIFO named .gitignore would block
	// the walk until some writer came along.
	if fi, err := fs.Stat(fsys, p); err != nil || !fi.Mode().IsRegular() {
		return m
	}
	f, err := fsys.Open(p)
	if err != nil {
		return m
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return m
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize))
	if err != nil {
		return m
	}
	return m.Add(dir, data)
}

func join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + strings.TrimPrefix(name, "/")
}
