// Package proc holds what the load drivers (bench/load, bench/server) and
// the report (bench/report) each need from the operating system: more file
// descriptors, memory figures from /proc, and binaries copied to run from.
package proc

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// RaiseFileLimit raises the soft limit on open files to the hard one: a
// thousand concurrent streams need more than the usual 1,024.
func RaiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// StatusMiB reads figures of /proc/<pid>/status (of this process when pid
// is 0) given in kB, such as VmRSS, VmHWM or RssAnon, in MiB, in the order
// of keys; a figure it cannot read is 0.
func StatusMiB(pid int, keys ...string) []float64 {
	out := make([]float64, len(keys))
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for i, key := range keys {
			if k == key {
				var kb float64
				fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
				out[i] = kb / 1024
			}
		}
	}
	return out
}

// CopyBinary copies the executable from to a new file to, byte by byte: a
// binary the Go linker has just written maps some 20 to 25 MiB more of its
// file into memory at start than the same bytes copied (the page cache's
// state), which would make RSS figures depend on how recently it was
// built. The copy is written, never cloned (the plain writer keeps io.Copy
// from handing the work to copy_file_range).
func CopyBinary(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(struct{ io.Writer }{dst}, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
