package skill

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ruleagent/ruleagent/tools/workspace"
)

// source is one directory of skills: each sub-directory holding a SKILL.md
// is a skill. Everything is read through an os.Root opened on the
// directory, so a symlink (or a skill name) can never lead out of it.
type source struct {
	dir  string // absolute, for the model and for notes
	inWS string // the directory relative to the workspace, when it is the workspace's skills/
	open func() (*os.Root, error)

	// The cache, guarded by Tool.mu.
	loaded bool
	fp     uint64
	skills []*Skill
	notes  []string
}

// entry is a SKILL.md candidate found by the directory listing.
type entry struct {
	name string // the skill's directory
	fi   fs.FileInfo
	err  error
}

// refresh re-parses the directory when its fingerprint changed and reports
// whether it did. The fingerprint is an FNV-64a hash over the path, size
// and modification time of every SKILL.md: one listing and one stat per
// skill, so it is cheap enough to compute on every use.
func (s *source) refresh(parses *int) bool {
	root, err := s.open()
	if err != nil {
		var notes []string
		if !errors.Is(err, fs.ErrNotExist) {
			notes = []string{fmt.Sprintf("skill directory %s cannot be opened: %v", s.dir, err)}
		}
		return s.set(hashNotes(notes), nil, notes)
	}
	defer root.Close()
	entries := list(root)
	h := fnv.New64a()
	for _, e := range entries {
		h.Write([]byte(e.name))
		h.Write([]byte{0})
		if e.err != nil {
			h.Write([]byte(e.err.Error()))
			continue
		}
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], uint64(e.fi.Size()))
		binary.LittleEndian.PutUint64(b[8:], uint64(e.fi.ModTime().UnixNano()))
		h.Write(b[:])
	}
	fp := h.Sum64()
	if s.loaded && fp == s.fp {
		return false
	}
	var skills []*Skill
	var notes []string
	seen := map[string]string{}
	for _, e := range entries {
		sk, err := s.load(root, e)
		if err == nil {
			*parses++
			if other, dup := seen[sk.Name]; dup {
				err = fmt.Errorf("name %q is already used by %s", sk.Name, other)
			}
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %v", s.display(e.name), err))
			continue
		}
		seen[sk.Name] = s.display(e.name)
		skills = append(skills, sk)
	}
	return s.set(fp, skills, notes)
}

func (s *source) set(fp uint64, skills []*Skill, notes []string) bool {
	changed := !s.loaded || fp != s.fp
	s.loaded, s.fp, s.skills, s.notes = true, fp, skills, notes
	return changed
}

func hashNotes(notes []string) uint64 {
	h := fnv.New64a()
	for _, n := range notes {
		h.Write([]byte(n))
	}
	return h.Sum64()
}

// list finds the SKILL.md of every sub-directory, in name order. Hidden
// directories are not skills. A sub-directory without a SKILL.md is not a
// skill either and is left out silently; one whose SKILL.md cannot be
// reached (a symlink out of the directory) is kept with its error.
func list(root *os.Root) []entry {
	dirs, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil
	}
	var out []entry
	for _, d := range dirs {
		name := d.Name()
		if strings.HasPrefix(name, ".") || !d.IsDir() && d.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := root.Stat(name)
			if err != nil {
				out = append(out, entry{name: name, err: reach(err)})
				continue
			}
			if !fi.IsDir() {
				continue
			}
		}
		fi, err := root.Stat(name + "/" + FileName)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			out = append(out, entry{name: name, err: reach(err)})
		default:
			out = append(out, entry{name: name, fi: fi})
		}
	}
	return out
}

// reach explains why a path inside the root could not be reached.
func reach(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("a symlink that leads nowhere")
	}
	return errors.New("refused: it leads out of the skill directory or cannot be read")
}

// load reads and parses one skill.
func (s *source) load(root *os.Root, e entry) (*Skill, error) {
	if e.err != nil {
		return nil, e.err
	}
	if !e.fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", FileName)
	}
	p := e.name + "/" + FileName
	// O_NONBLOCK: a FIFO swapped in since the listing must not block.
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, reach(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", FileName)
	}
	if err := workspace.CheckLinks(p, fi); err != nil {
		return nil, errors.New("SKILL.md has several hard links; refused, as another link may lie outside the skill directory")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	sk, err := parse(e.name, data)
	if err != nil {
		return nil, err
	}
	sk.Dir = filepath.Join(s.dir, e.name)
	if s.inWS != "" {
		sk.InWorkspace = path.Join(s.inWS, e.name)
	}
	sk.src, sk.dirName = s, e.name
	return sk, nil
}

// display names a skill directory in notes: workspace-relative when it is
// in the workspace, absolute otherwise.
func (s *source) display(name string) string {
	if s.inWS != "" {
		return path.Join(s.inWS, name, FileName)
	}
	return filepath.Join(s.dir, name, FileName)
}

// companions lists the files beside a skill's SKILL.md, so that the model
// knows what it can read: at most maxCompanions, three levels deep.
func (s *source) companions(dirName string) (files []string, more int) {
	const maxCompanions = 50
	root, err := s.open()
	if err != nil {
		return nil, 0
	}
	defer root.Close()
	_ = fs.WalkDir(root.FS(), dirName, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dirName {
			return nil
		}
		rel := strings.TrimPrefix(p, dirName+"/")
		switch {
		case strings.HasPrefix(d.Name(), "."):
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			if strings.Count(rel, "/") >= 2 {
				return fs.SkipDir
			}
			return nil
		case rel == FileName:
			return nil
		}
		if len(files) == maxCompanions {
			more++
			return nil
		}
		files = append(files, rel)
		return nil
	})
	return files, more
}
