package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// A readPlan is how the read-only trees are granted to Landlock without
// the paths inside them that must stay unreadable. Landlock grants
// hierarchies: a rule on a directory covers everything beneath it and
// nothing can be taken back. So a tree holding such a path is granted
// around it: each entry of the tree's directory gets its own rule, except
// the withheld one, recursing only into directories that hold one. Rules
// attach to the files and directories that exist when the plan is made;
// an entry added later to a directory granted entry by entry (a file
// renamed over /etc/shadow, a new library beside withheld programs) has no
// rule, so it stays unreadable until the plan is made again, which
// happens when one of those directories changes.
type readPlan struct {
	// rules are the paths to grant (whole hierarchies), with the rights
	// of each: reading, or, for a directory granted entry by entry,
	// listing only (so that ls still works there; the names of withheld
	// entries stay visible, their contents do not).
	rules  []string
	access []uint64
	// fds hold rules opened once (O_PATH), so that each run's ruleset
	// only adds them; -1 where opening failed (the path is opened per
	// run then). Close releases them.
	fds []int
	// dirs are the directories granted entry by entry, with their state
	// when the plan was made.
	dirs map[string]dirState
	// carved are the writable trees granted entry by entry around the
	// server's paths (see addWritable), by their name in the spec.
	carved map[string]bool
}

type dirState struct {
	ino          uint64
	mtime, ctime unix.Timespec
}

func statDir(p string) (dirState, bool) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return dirState{}, false
	}
	return dirState{ino: st.Ino, mtime: st.Mtim, ctime: st.Ctim}, true
}

// current reports whether no directory of the plan changed since it was
// made.
func (p *readPlan) current() bool {
	for d, was := range p.dirs {
		if now, ok := statDir(d); !ok || now != was {
			return false
		}
	}
	return true
}

// makeReadPlan grants roots except the paths of withheld (absolute,
// without symlinks), apart from those keep says must stay readable.
func makeReadPlan(roots, withheld []string, keep func(string) bool) *readPlan {
	var w []string
	for _, p := range withheld {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if p = filepath.Clean(p); !keep(p) {
			w = append(w, p)
		}
	}
	sort.Strings(w)
	w = slices.Compact(w)
	plan := &readPlan{dirs: map[string]dirState{}}
	for _, r := range readRoots(roots) {
		plan.grantAround(r, inside(w, r))
	}
	plan.openFDs()
	return plan
}

// openFDs opens the rules that have no descriptor yet, once, so that each
// run's ruleset only adds them.
func (p *readPlan) openFDs() {
	from := len(p.fds)
	for len(p.fds) < len(p.rules) {
		p.fds = append(p.fds, -1)
	}
	// Keep the descriptors only where the file limit leaves plenty for
	// the commands' pipes and sockets.
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil || lim.Cur < uint64(len(p.rules))+4096 {
		return
	}
	for i := from; i < len(p.rules); i++ {
		fd, err := unix.Open(p.rules[i], unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		switch err := unix.Fstat(fd, &st); {
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		case err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG:
			p.access[i] &= fileRights
		default:
			unix.Close(fd) // opened per run, and checked then
			continue
		}
		p.fds[i] = fd
	}
}

// Close releases the plan's descriptors.
func (p *readPlan) Close() {
	for i, fd := range p.fds {
		if fd >= 0 {
			unix.Close(fd)
			p.fds[i] = -1
		}
	}
}

// inside returns the sorted paths of w that lie strictly under dir.
func inside(w []string, dir string) []string {
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	i := sort.SearchStrings(w, prefix)
	j := i
	for j < len(w) && strings.HasPrefix(w[j], prefix) {
		j++
	}
	return w[i:j]
}

// grantAround grants dir except the paths of w (sorted, all under dir).
func (p *readPlan) grantAround(dir string, w []string) {
	p.carve(dir, accessRead, w, func(string) uint64 { return 0 })
}

// carve grants dir with access except the paths of around (sorted, all
// under dir), which get rightsOf's rights instead (0: none; they are
// carved in turn around the paths of around under them). dir itself, and
// every directory between it and such a path, can only be listed: a right
// on a directory covers all beneath it.
func (p *readPlan) carve(dir string, access uint64, around []string, rightsOf func(string) uint64) {
	if len(around) == 0 {
		p.rules, p.access = append(p.rules, dir), append(p.access, access)
		return
	}
	st, ok := statDir(dir)
	if !ok {
		return
	}
	p.dirs[dir] = st
	p.rules, p.access = append(p.rules, dir), append(p.access, ll.AccessFSReadDir)
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	entries, _ := f.ReadDir(-1)
	f.Close()
	for _, e := range entries {
		child := filepath.Join(dir, e.Name())
		if _, found := slices.BinarySearch(around, child); found {
			if a := rightsOf(child); a != 0 && e.IsDir() {
				p.carve(child, a, inside(around, child), rightsOf)
			} else if a != 0 && e.Type().IsRegular() {
				p.rules, p.access = append(p.rules, child), append(p.access, a)
			}
			continue
		}
		if e.Type()&os.ModeSymlink != 0 {
			// A symlink needs no right; its target is granted, or
			// not, where it lies.
			continue
		}
		under := inside(around, child)
		if len(under) > 0 && e.IsDir() {
			p.carve(child, access, under, rightsOf)
			continue
		}
		p.rules, p.access = append(p.rules, child), append(p.access, access)
	}
}
