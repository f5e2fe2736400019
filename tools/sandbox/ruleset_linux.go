package sandbox

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Access rights, by what they are for.
const (
	accessRead = ll.AccessFSReadFile | ll.AccessFSReadDir
	accessExec = ll.AccessFSExecute | ll.AccessFSReadFile
	// accessWrite leaves out device nodes and IOCTLs.
	accessWrite = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
	accessDevice = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	// fileRights are the rights that apply to a file (the others are
	// about directory entries).
	fileRights = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// fsRights are the filesystem rights each Landlock ABI knows.
func fsRights(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	}
	return 1<<13 - 1
}

// systemReadable are read (not executed) by every confined process:
// libraries, shared data, configuration, and the process's own views.
// The directories of programs (/usr/bin, /usr/sbin, ...) are not among
// them: a program that may not be executed may not be read either, or the
// dynamic loader would run it.
var systemReadable = []string{"/etc", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec", "/usr/share",
	"/usr/include", "/usr/local/lib", "/usr/local/share", "/usr/local/include", "/usr/local/etc", "/lib", "/lib32", "/lib64",
	"/libx32", "/proc", "/sys"}

// devices may be opened for reading and writing.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// readOnlyTrees are the trees spec's commands may read but not write.
func readOnlyTrees(spec *Spec) []string {
	return append(slices.Clone(systemReadable), spec.Read...)
}

// newReadPlan makes the plan of spec's read-only trees: everything in them
// but the withheld system paths and the hidden paths, except the programs
// the commands may execute.
func newReadPlan(spec *Spec) *readPlan {
	allowed := map[string]bool{}
	for _, p := range spec.Exec {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			allowed[real] = true
		}
	}
	var execDirs []string
	for _, d := range spec.ExecDirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			execDirs = append(execDirs, real)
		}
	}
	keep := func(p string) bool { return allowed[p] || insideAny(p, execDirs) }
	withheld := append(append(slices.Clone(spec.Withheld), spec.Hidden...), spec.Secret...)
	plan := makeReadPlan(readOnlyTrees(spec), withheld, keep)
	plan.addWritable(spec)
	return plan
}

// buildRuleset makes a Landlock ruleset for spec, with runDir as the
// private temporary directory and plan granting the read-only trees. The
// caller closes the descriptor.
func buildRuleset(spec *Spec, abi int, runDir string, plan *readPlan) (int, error) {
	attr := ll.RulesetAttr{HandledAccessFS: fsRights(abi)}
	if abi >= 4 && spec.Network != NetworkAny {
		attr.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		if spec.Network == NetworkLoopback && spec.inNetNS {
			// The namespace has nothing but loopback: TCP inside it is
			// what this setting is for.
			attr.HandledAccessNet = 0
		}
	}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	handled := attr.HandledAccessFS
	// add grants access to path. A missing path is an error only when
	// required; a path planned entry by entry is not followed if it has
	// become a symlink since, and skipped if it is no longer a file or a
	// directory.
	addFD := func(pfd int, path string, access uint64, planned bool) error {
		var st unix.Stat_t
		if unix.Fstat(pfd, &st) != nil {
			return nil
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFREG, unix.S_IFCHR:
			// Rights about directory entries do not apply to files.
			access &= fileRights
		default:
			if planned {
				return nil
			}
			access &= fileRights
		}
		if err := ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{ParentFd: pfd, AllowedAccess: access & handled}, 0); err != nil {
			return fmt.Errorf("landlock_add_rule %s: %w", path, err)
		}
		return nil
	}
	add := func(path string, access uint64, required, planned bool) error {
		flags := unix.O_PATH | unix.O_CLOEXEC
		if planned {
			flags |= unix.O_NOFOLLOW
		}
		pfd, err := unix.Open(path, flags, 0)
		if err != nil {
			if required {
				return fmt.Errorf("%s: %w", path, err)
			}
			return nil
		}
		defer unix.Close(pfd)
		return addFD(pfd, path, access, planned)
	}
	steps := []error{add(runDir, accessRead|accessWrite, true, false)}
	// The writable trees the plan carves around the server's paths are
	// among its rules.
	if !plan.carved[spec.Workspace] {
		steps = append(steps, add(spec.Workspace, accessRead|accessWrite, true, false))
	}
	for _, p := range spec.Write {
		if !plan.carved[p] {
			steps = append(steps, add(p, accessRead|accessWrite, false, false))
		}
	}
	for i, p := range plan.rules {
		if plan.fds[i] < 0 {
			steps = append(steps, add(p, plan.access[i], false, true))
			continue
		}
		if err := ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{ParentFd: plan.fds[i], AllowedAccess: plan.access[i] & handled}, 0); err != nil {
			steps = append(steps, fmt.Errorf("landlock_add_rule %s: %w", p, err))
		}
	}
	for _, p := range devices {
		steps = append(steps, add(p, accessDevice, false, false))
	}
	for _, p := range spec.Exec {
		steps = append(steps, add(p, accessExec, false, false))
	}
	for _, p := range spec.ExecDirs {
		steps = append(steps, add(p, accessExec|ll.AccessFSReadDir, false, false))
	}
	for _, err := range steps {
		if err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	if attr.HandledAccessNet != 0 {
		for _, port := range spec.Connect {
			if err := ll.LandlockAddNetPortRule(fd, &ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP, Port: uint64(port)}, 0); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("landlock_add_rule port %d: %w", port, err)
			}
		}
	}
	return fd, nil
}

// restrictThread confines the calling OS thread (only it) with the
// ruleset and the seccomp filter: what it starts afterwards inherits the
// confinement. The caller must have locked the goroutine to its thread and
// never unlock it, so that the thread ends with the goroutine.
func restrictThread(rulesetFD int, filter []unix.SockFilter) error {
	dropCapabilities()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(rulesetFD, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return loadSeccomp(filter)
}

// dropCapabilities empties the calling thread's capability bounding,
// inheritable and ambient sets, so that what it executes gets no
// capability even as root: no CAP_SYS_PTRACE to read the memory or
// environment of a non-dumpable process, no CAP_NET_RAW, no
// CAP_DAC_OVERRIDE. Without CAP_SETPCAP (not root) there is nothing to
// drop, and the calls fail harmlessly.
func dropCapabilities() {
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		fmt.Sscan(strings.TrimSpace(string(b)), &last)
	}
	for c := 0; c <= last; c++ {
		_ = unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil {
		data[0].Inheritable, data[1].Inheritable = 0, 0
		_ = unix.Capset(&hdr, &data[0])
	}
}

// Loaders returns the dynamic loaders programs need to start: the ELF
// interpreters of the given programs. The kernel executes the loader of
// every dynamically linked program, so it must be executable.
func Loaders(programs ...string) []string {
	var out []string
	for _, p := range programs {
		// A script runs its #! interpreter, which needs its own loader.
		if interp := shebang(p); interp != "" {
			out = append(out, interp)
			out = append(out, Loaders(interp)...)
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err == nil {
				out = append(out, strings.TrimRight(string(b), "\x00"))
			}
		}
		f.Close()
	}
	// The usual names, in case the programs above are scripts.
	for _, g := range []string{"/lib64/ld-linux*.so*", "/lib/ld-linux*.so*", "/lib/ld-musl-*.so*"} {
		m, _ := filepath.Glob(g)
		out = append(out, m...)
	}
	return sortedUnique(out)
}

// shebang returns the interpreter a script names on its #! line.
func shebang(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return ""
	}
	return fields[0]
}
