package sandbox

import (
	"debug/elf"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// The system trees confined commands read (libraries, shared data,
// configuration) hold two kinds of files they must not read:
//
//   - programs. Landlock's execute right is checked when a file is
//     executed, but the dynamic loader run as a program
//     (ld-linux-x86-64.so.2 /usr/lib/jvm/.../bin/java) maps its argument
//     with mmap, which Landlock does not check: any program a command can
//     read, it can run. So programs under the readable trees (a JVM, a
//     bundled Python, LLVM's tools, git's helpers, ...) are not readable,
//     except those on the exec allowlist;
//   - files only their owner or group may read (/etc/shadow, /etc/gshadow,
//     /etc/ssl/private, SSH host keys, sudoers). Run as root, a command
//     would read them as their owner; it reads only what every user may.
//
// They are found by walking the trees once per process; each time a
// tool's sandbox (its helper) starts, every directory walked is checked
// again (its change time) and the directories that changed are walked
// again, so a program installed since is found. Landlock grants the trees
// around what is withheld (see readPlan).

// systemScan is the process's index of the system trees.
var systemScan struct {
	sync.Mutex
	index *scanIndex
}

// systemWithheld returns what must not be readable under the system's
// readable trees, bringing the index up to date first.
func systemWithheld() []string {
	systemScan.Lock()
	defer systemScan.Unlock()
	if systemScan.index == nil {
		systemScan.index = newScanIndex(readRoots(systemReadable))
	} else {
		systemScan.index.refresh()
	}
	return systemScan.index.withheld()
}

// scanIndex is what a walk found, directory by directory.
type scanIndex struct {
	mu   sync.Mutex
	dirs map[string]*dirScan
}

// dirScan is one directory: its state when walked, its entries to
// withhold, and its subdirectories (walked too).
type dirScan struct {
	state    dirState
	withheld []string
	subdirs  []string
}

func newScanIndex(roots []string) *scanIndex {
	x := &scanIndex{dirs: map[string]*dirScan{}}
	var walk []string
	for _, r := range roots {
		if scanned(r) {
			walk = append(walk, r)
		}
	}
	x.walk(walk)
	return x
}

// withheld returns every withheld path, sorted.
func (x *scanIndex) withheld() []string {
	var out []string
	for _, d := range x.dirs {
		out = append(out, d.withheld...)
	}
	slices.Sort(out)
	return out
}

// refresh walks again the directories that changed since they were
// walked, and forgets those that are gone.
func (x *scanIndex) refresh() {
	var changed []string
	for dir, d := range x.dirs {
		if now, ok := statDir(dir); !ok || now != d.state {
			changed = append(changed, dir)
		}
	}
	for _, dir := range changed {
		x.forget(dir)
	}
	var walk []string
	for _, dir := range changed {
		if _, ok := statDir(dir); ok {
			walk = append(walk, dir)
		}
	}
	x.walk(walk)
}

// forget drops dir and everything under it from the index.
func (x *scanIndex) forget(dir string) {
	d, ok := x.dirs[dir]
	if !ok {
		return
	}
	delete(x.dirs, dir)
	for _, sub := range d.subdirs {
		x.forget(sub)
	}
}

// scanned are the readable trees that are walked: /proc and /sys are
// the kernel's own views, checked by the kernel per process.
func scanned(root string) bool { return root != "/proc" && root != "/sys" }

// readRoots resolves symlinked tree names (/lib is /usr/lib on most
// systems) and drops missing trees and trees inside another one.
func readRoots(paths []string) []string {
	var out []string
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		out = append(out, real)
	}
	out = sortedUnique(out)
	kept := out[:0]
	for _, p := range out {
		if len(kept) > 0 && within(kept[len(kept)-1], p) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// walk walks dirs and everything under them with a few workers, adding
// each directory to the index.
func (x *scanIndex) walk(dirs []string) {
	var (
		cond   = sync.NewCond(&x.mu)
		stack  = slices.Clone(dirs)
		active int
	)
	var workers sync.WaitGroup
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			x.mu.Lock()
			defer x.mu.Unlock()
			for {
				for len(stack) == 0 && active > 0 {
					cond.Wait()
				}
				if len(stack) == 0 {
					cond.Broadcast()
					return
				}
				d := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				active++
				x.mu.Unlock()
				scan := scanDir(d)
				x.mu.Lock()
				active--
				if scan != nil {
					x.dirs[d] = scan
					stack = append(stack, scan.subdirs...)
				}
				cond.Broadcast()
			}
		}()
	}
	workers.Wait()
}

// scanDir looks at one directory's entries: its subdirectories to walk
// and the entries to withhold. It returns nil if dir cannot be read.
func scanDir(dir string) *dirScan {
	state, ok := statDir(dir)
	if !ok {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	d := &dirScan{state: state}
	entries, _ := f.ReadDir(-1)
	dfd := int(f.Fd())
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 {
			continue // what it names is judged where it lies
		}
		var st unix.Stat_t
		if unix.Fstatat(dfd, e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if st.Mode&0o005 != 0o005 {
				d.withheld = append(d.withheld, p)
				continue
			}
			d.subdirs = append(d.subdirs, p)
		case unix.S_IFREG:
			if st.Mode&0o004 == 0 || (st.Mode&0o111 != 0 && isProgram(dfd, e.Name())) {
				d.withheld = append(d.withheld, p)
			}
		default:
			if st.Mode&0o004 == 0 {
				d.withheld = append(d.withheld, p)
			}
		}
	}
	return d
}

// isProgram reports whether name, in the directory dfd, is an ELF program
// the dynamic loader would run: an executable, a position-independent
// executable (it names an interpreter, or is flagged PIE), not a shared
// library (which names one too, as libc.so.6 does).
func isProgram(dfd int, name string) bool {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	file := os.NewFile(uintptr(fd), name)
	defer file.Close()
	var magic [4]byte
	if n, _ := file.ReadAt(magic[:], 0); n < 4 || string(magic[:]) != elf.ELFMAG {
		return false
	}
	ef, err := elf.NewFile(file)
	if err != nil {
		return false
	}
	defer ef.Close()
	switch ef.Type {
	case elf.ET_EXEC:
		return true
	case elf.ET_DYN:
		if base := filepath.Base(name); strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.") {
			return false
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				return true
			}
		}
		if flags, err := ef.DynValue(elf.DT_FLAGS_1); err == nil {
			for _, f := range flags {
				if elf.DynFlag1(f)&elf.DF_1_PIE != 0 {
					return true
				}
			}
		}
	}
	return false
}
