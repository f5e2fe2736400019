package write

import (
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// ioctl numbers and the flag of linux/fs.h.
const (
	fsIocGetFlags = 0x80086601
	fsIocSetFlags = 0x40086602
	fsImmutableFl = 0x10
)

// makeImmutable sets the immutable attribute on dir (chattr +i), so that
// nothing can be created, renamed or removed in it, even by root: the one
// way to make an atomic write fail for a test running as root. It skips the
// test where the attribute is not available.
func makeImmutable(t *testing.T, dir string) (undo func()) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var flags int
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocGetFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
		t.Skipf("cannot read file attributes here: %v", e)
	}
	set := flags | fsImmutableFl
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), fsIocSetFlags, uintptr(unsafe.Pointer(&set))); e != 0 {
		t.Skipf("cannot make a directory immutable here: %v", e)
	}
	undo = func() {
		g, err := os.Open(dir)
		if err != nil {
			t.Error(err)
			return
		}
		defer g.Close()
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, g.Fd(), fsIocSetFlags, uintptr(unsafe.Pointer(&flags))); e != 0 {
			t.Errorf("clearing the immutable attribute: %v", e)
		}
	}
	t.Cleanup(undo) // clearing twice is harmless, and TempDir's removal needs it
	return undo
}
