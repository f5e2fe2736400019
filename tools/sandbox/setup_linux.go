package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// facts are what the confined side managed to set up, reported back so
// that the tool can say how its commands are confined.
type facts struct {
	ABI     int      `json:"abi"`
	NoExec  bool     `json:"noexec"`
	NetNS   bool     `json:"netns"`
	Hidden  []string `json:"hidden,omitempty"`
	Exposed []string `json:"exposed,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// prepareNamespaces runs in a process started in new mount and network
// namespaces: it makes the writable trees non-executable, hides paths
// inside readable trees, and brings up loopback when asked to. It must run
// before any command starts.
func prepareNamespaces(spec *Spec, f *facts) {
	spec.inNetNS = spec.privateNetwork()
	f.NetNS = spec.inNetNS
	if spec.Network == NetworkLoopback {
		if err := loopbackUp(); err != nil {
			f.Error = "loopback: " + err.Error()
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		f.Error = "mount: " + err.Error()
		return
	}
	if len(spec.Hosts) > 0 {
		if err := addHosts(spec); err != nil {
			f.Error = "/etc/hosts: " + err.Error()
			return
		}
	}
	f.NoExec = true
	for _, p := range append([]string{spec.Workspace, spec.TmpRoot}, spec.Write...) {
		if holdsSystem(p) {
			f.NoExec = false
			continue
		}
		if err := remount(p, unix.MS_NOEXEC|unix.MS_NOSUID|unix.MS_NODEV); err != nil {
			f.NoExec = false
		}
	}
	for _, h := range spec.Hidden {
		if !insideAny(h, spec.writable()) {
			continue // Landlock keeps it unreadable (see readPlan)
		}
		if err := hide(h, spec.TmpRoot); err != nil {
			f.Exposed = append(f.Exposed, h)
			continue
		}
		f.Hidden = append(f.Hidden, h)
	}
}

// exposedWithoutNamespaces lists the hidden paths that only a mount
// namespace could hide: those that exist inside a writable tree.
func exposedWithoutNamespaces(spec *Spec) []string {
	var out []string
	for _, h := range spec.Hidden {
		if insideAny(h, spec.Secret) {
			continue // Landlock grants the writable trees around it
		}
		if _, err := os.Lstat(h); err == nil && insideAny(h, spec.writable()) {
			out = append(out, h)
		}
	}
	return out
}

// holdsSystem reports whether making p non-executable would stop programs
// from running: p is, or contains, a system directory.
func holdsSystem(p string) bool {
	for _, sys := range []string{"/usr", "/bin", "/lib", "/lib64", "/sbin", "/opt", "/etc"} {
		if within(p, sys) {
			return true
		}
	}
	return false
}

// within reports whether x is dir or inside it.
func within(dir, x string) bool {
	dir, x = filepath.Clean(dir), filepath.Clean(x)
	return x == dir || dir == "/" || strings.HasPrefix(x, dir+"/")
}

func insideAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if d != "" && within(d, p) {
			return true
		}
	}
	return false
}

// remount makes p a mount of its own with the given flags added. The
// flags it already has are kept: in a user namespace the kernel refuses a
// remount that would clear them.
func remount(p string, flags uintptr) error {
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|flags|lockedFlags(p), "")
}

// lockedFlags are the mount flags p's mount has, as mount(2) flags.
func lockedFlags(p string) uintptr {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return 0
	}
	var flags uintptr
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	return flags
}

// hide covers p with an empty, read-only, inaccessible file system (a
// directory) or file (a file). A missing directory of the workspace's own
// state is created first, so that it is covered once tools write it.
func hide(p, tmpRoot string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		if filepath.Base(p) != "backups" {
			return nil
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		fi, err = os.Lstat(p)
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=000")
	}
	empty := filepath.Join(tmpRoot, ".hidden-file")
	if err := os.WriteFile(empty, nil, 0); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return bindReadOnly(empty, p)
}

// bindReadOnly mounts src over dst, read-only.
func bindReadOnly(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|lockedFlags(dst), "")
}

// addHosts covers /etc/hosts with a copy that also holds the connect
// list's host names, so that commands resolve them without DNS.
func addHosts(spec *Spec) error {
	const hostsFile = "/etc/hosts"
	orig, err := os.ReadFile(hostsFile)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.Write(orig)
	if len(orig) > 0 && orig[len(orig)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString("# added by ruleagent's sandbox: the tool's connect list\n")
	names := make([]string, 0, len(spec.Hosts))
	for name := range spec.Hosts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, addr := range spec.Hosts[name] {
			fmt.Fprintf(&b, "%s %s\n", addr, name)
		}
	}
	copyPath := filepath.Join(spec.TmpRoot, ".hosts")
	if err := os.WriteFile(copyPath, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return bindReadOnly(copyPath, hostsFile)
}

// loopbackUp brings up the loopback interface of this network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var req [40]byte // struct ifreq
	copy(req[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), unix.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return fmt.Errorf("SIOCGIFFLAGS: %w", e)
	}
	flags := *(*uint16)(unsafe.Pointer(&req[16]))
	*(*uint16)(unsafe.Pointer(&req[16])) = flags | unix.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), unix.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&req[0]))); e != 0 {
		return fmt.Errorf("SIOCSIFFLAGS: %w", e)
	}
	return nil
}
